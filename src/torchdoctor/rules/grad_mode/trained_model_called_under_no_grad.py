"""TD124 trained-model-called-under-no-grad."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD124",
    name="trained-model-called-under-no-grad",
    category=Category.GRAD_MODE,
    severity=Severity.WARNING,
    proof="lint",
    message="`{model}` is given to the optimizer (line {optimizer_line}) but the training step calls it only under `{manager}`: no gradient reaches its parameters, so it never learns",
    hint="Call `{model}(...)` outside `{manager}` in the training step; if it is meant to stay frozen, leave its parameters out of the optimizer (and call `{model}.requires_grad_(False)`).",
    variants={
        # run: the optimizer's parameters got no gradient, their model ran only under no_grad
        "parameters-without-gradient": Variant(message="{count} trainable parameter(s) given to the optimizer got no gradient: {names}; their model ran only with autograd off (no_grad), and its output fed `{consumer}`, which trained", hint="Call this model outside `torch.no_grad()` in the training step; if it is meant to stay frozen, leave its parameters out of the optimizer (and call `requires_grad_(False)` on it)."),
        # one term of a summed loss comes from the model under no_grad
        "constant-term": Variant(message="`{term}` (`{how}`) comes from `{model}(...)` called under `{manager}` at line {block_line}: in `{total}` it is a constant, so `{backward}` at line {backward_line} trains `{model}` on the other terms only", hint="Call `{model}(...)` outside `{manager}` where its output feeds a loss that trains it."),
    },
    sees={
        "lint": "a model the optimizer is built from, called only under `no_grad`/`inference_mode`, whose output feeds the loss of the training step (it never learns; a frozen model with `requires_grad_(False)`, a GAN generator also called with gradients, outputs that reach the loss only as data are fine; an output that alone makes the loss, so that backward() fails, is TD416); also a loss term of such a no-grad output added to a loss that backpropagates (a constant there)",
        "run": "a model given to the optimizer that ran only under `no_grad` while its output fed a model that trained (an encoder under `no_grad` before the decoder), at the line that called it; a teacher whose output only reaches a loss, or a model frozen with `requires_grad_(False)`, is not reported",
    },
    doc="""
## What it does
Flags a model whose `.parameters()` a `torch.optim` optimizer is built from, when every call
of that model in the file runs with autograd off (`torch.no_grad()`, `torch.inference_mode()`)
and one of those calls sits in a training step: its output feeds the loss that step
backpropagates. `torchdoctor run` reports the same bug from the live calls: a model whose
parameters are in an optimizer ran only with autograd off, and the very tensor it returned
was given to a model that trained.

Also flags, in one function, a loss term computed only from such a model's output made under
`no_grad` (and labels or constants) and added to a loss that backpropagates, when an optimizer
of the file trains the model: `with torch.no_grad(): out = D(real)`, `d_loss = criterion(out,
ones) + d_loss_fake`. The term is a constant there: the model learns from the other terms only
(a discriminator that never sees real images, a model trained on its regulariser alone).

## Why is this bad?
Under `no_grad` the model's output has no autograd history, so the loss's graph stops there:
`backward()` gives the layers after it their gradients and leaves this model's `.grad` at
`None`. Optimizers skip parameters without a gradient, so the model keeps its initial weights
for the whole run, while the loss still goes down (the rest of the network learns around it).
Verified on torch 2.13: an encoder called under `no_grad` before a trained decoder keeps
`.grad is None` and bit-identical weights after ten Adam steps.

Not flagged: a model that is called with gradients somewhere in the file (a GAN's generator
under `no_grad` for the discriminator's step), a model frozen with `requires_grad_(False)`,
a teacher, EMA or target network the optimizer is not built from, and outputs that do not
reach the loss (acting in an environment, logging).

## Example
```python
import torch
from torch import nn

encoder = nn.Sequential(nn.Linear(16, 8), nn.ReLU())
decoder = nn.Linear(8, 16)
optimizer = torch.optim.Adam(list(encoder.parameters()) + list(decoder.parameters()))
data = torch.randn(100, 16)
for epoch in range(10):
    with torch.no_grad():
        code = encoder(data)
    loss = nn.functional.mse_loss(decoder(code), data)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
```

Use instead:
```python
import torch
from torch import nn

encoder = nn.Sequential(nn.Linear(16, 8), nn.ReLU())
decoder = nn.Linear(8, 16)
optimizer = torch.optim.Adam(list(encoder.parameters()) + list(decoder.parameters()))
data = torch.randn(100, 16)
for epoch in range(10):
    code = encoder(data)
    loss = nn.functional.mse_loss(decoder(code), data)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
```
""",
)
