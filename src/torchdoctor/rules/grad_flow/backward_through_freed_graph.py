"""TD415 backward-through-freed-graph."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD415",
    name="backward-through-freed-graph",
    category=Category.GRAD_FLOW,
    severity=Severity.ERROR,
    proof="run",
    message="backward() reaches a graph whose saved tensors were already freed: {cause}",
    hint="Detach what you carry from one step to the next (`h = h.detach()`); for two losses, call backward() once on their sum.",
    variants={
        # the crash, when run saw the same parameters before and after the previous backward()
        "carried": Variant(message="backward() reaches a graph whose saved tensors were already freed: a tensor computed in an earlier iteration (a recurrent hidden state, a cached feature, a running total) is used again, so this backward() reaches the previous iteration's graph, which was already freed", hint="Detach what you carry from one iteration to the next at the start of the iteration (`h = h.detach()`); do not pass retain_graph=True, which keeps every old graph in memory."),
        # the crash, with no optimizer step or no carried state between the two backward() calls
        "twice": Variant(message="backward() reaches a graph whose saved tensors were already freed: backward() runs twice over the same graph in one step (two losses that share part of the graph, or backward() called twice)", hint="Add the losses and call backward() once (`(loss_a + loss_b).backward()`), or pass `retain_graph=True` to the first of the two backward() calls only."),
        # the crash, when the two backward() calls reach different models' parameters with a step between
        "fed-to-another-model": Variant(message="backward() reaches a graph whose saved tensors were already freed: this loss uses an output of {producer} that an earlier loss already backpropagated through (and freed) before an optimizer step: an output fed to a second model's loss without `.detach()` (a GAN's fake batch given to the discriminator)", hint="Detach that output where the other model's loss uses it (`discriminator(fake.detach())`), and keep the undetached one for this loss; or compute it again."),
        # a recurrent state carried from batch to batch (lint)
        "carried-state": Variant(message="`{state}` goes back into the model with the graph of the previous batch: the next backward() reaches that graph, which the previous backward() freed, and fails (with retain_graph=True, every batch's graph stays in memory)", hint="Detach the state at the top of each batch: `{state} = {state}.detach()` (each tensor of a tuple)."),
    },
    sees={
        "lint": "`out, h = model(x, h)` in a loop that runs backward() (without `retain_graph=True`), where `model` is an `nn.LSTM`/`GRU`/`RNN` or a class of the file that builds one and never detaches, and nothing else in the loop binds `h` (a detach before or after the call, a fresh state) or detaches in place",
    },
    doc="""
## What it does
Explains the crash "Trying to backward through the graph a second time" and tells its two
usual causes apart from what the run did before: a tensor carried over from an earlier step
(an optimizer step happened since the last backward), or two backward() calls over a shared
graph within one step.

`torchdoctor lint` finds the commonest case before the run: a recurrent state fed back into an
`nn.LSTM` / `GRU` / `RNN` (or a model of the file built on one that never detaches) in a loop
that runs backward(), with nothing in the loop detaching or replacing it.

## Why is this bad?
backward() frees the graph's saved tensors as it goes. A recurrent hidden state or a cached
tensor that is not detached links the new step's graph to the old one. Adding
`retain_graph=True` silences the error but keeps every old graph in memory and makes each step
slower than the last.

## Example
```python
import torch
from torch import nn

torch.manual_seed(0)
cell = nn.RNNCell(4, 8)
optimizer = torch.optim.SGD(cell.parameters(), lr=0.1)
h = torch.zeros(2, 8)
for step in range(3):
    h = cell(torch.randn(2, 4), h)
    loss = h.pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
```

Use instead:
```python
import torch
from torch import nn

torch.manual_seed(0)
cell = nn.RNNCell(4, 8)
optimizer = torch.optim.SGD(cell.parameters(), lr=0.1)
h = torch.zeros(2, 8)
for step in range(3):
    h = cell(torch.randn(2, 4), h.detach())
    loss = h.pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
```
""",
)
