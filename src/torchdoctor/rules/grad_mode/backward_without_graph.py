"""TD416 backward-without-graph."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

#: the `{why}` and the hint when the source says how the tensor given to backward() lost its
#: graph: the block that turned autograd off around its assignment
UNDER_GRAD_OFF = "`{name}` was computed under the `{manager}` block at {lines}"
#: ...around the assignment of a name its own assignment reads (`loss = loss_fn(output, y)`)
FROM_GRAD_OFF = "`{name}` is computed from `{source}`, which was computed under the `{manager}` block at {lines}"
#: ...the decorator that turned it off for the function that assigns it
UNDER_GRAD_OFF_DECORATOR = "`{name}` was computed in a function decorated with `{manager}` (line {line})"
GRAD_OFF_HINT = (
    "Compute `{name}` outside `{manager}` if it is a training loss (keep no_grad for evaluation); if it is an "
    "evaluation loss, do not call backward() on it. Do not set `{name}.requires_grad = True`: that silences the "
    "error and trains nothing."
)
#: ...a call or attribute in its assignment that leaves the graph (`.item()`, `torch.tensor(...)`)
CUT = "`{name}` is built at line {line} from `{cut}`: the graph was cut there"
CUT_HINT = (
    "Build `{name}` from the model's output with torch operations only (without `{cut}`). Do not set "
    "`{name}.requires_grad = True`: that silences the error and trains nothing."
)

RULE = Rule(
    code="TD416",
    name="backward-without-graph",
    category=Category.GRAD_MODE,
    severity=Severity.ERROR,
    proof="run",
    message="backward() is called on a tensor that has no graph: {why}",
    hint="Compute the loss from the model's output outside `torch.no_grad()`; never set `loss.requires_grad = True`, which silences the error and trains nothing.",
    sees={
        "lint": "in one function, `loss.backward()` where the loss is a loss function of a model output made under `no_grad`/`inference_mode` and of labels or constants only (`with torch.no_grad(): output = model(x)`; `loss = criterion(output, y)`); not when another model's output, a regulariser or `requires_grad_()` gives it a graph",
    },
    doc="""
## What it does
Explains the crash "element 0 of tensors does not require grad and does not have a grad_fn"
and says why the loss has no graph: it was computed under `torch.inference_mode()` or
`torch.no_grad()`, every parameter is frozen, or the graph was cut (`.item()`, `.numpy()`,
`.detach()`, `torch.tensor(...)`). When the function that calls backward() assigns that
tensor once, the message names it and its cause from the source: the `with torch.no_grad():`
block (and its lines) around its assignment or around that of a name it is computed from, or the
call in its assignment that cuts the graph.

`torchdoctor lint` finds the commonest form before anything runs: in one function, a model's
output made under `torch.no_grad()` / `torch.inference_mode()`, a loss computed from it and
labels (or constants), and `backward()` on that loss. A loss with anything else that can carry a
graph (another model's output, a regulariser added, `requires_grad_()`) is left alone.

## Why is this bad?
Without a graph there is nothing to differentiate. The tempting fix,
`loss.requires_grad = True`, makes the error go away and the model silently stops learning.

## Example
```python
import torch
from torch import nn

model = nn.Linear(8, 1)
x, y = torch.randn(16, 8), torch.randn(16, 1)
with torch.no_grad():
    loss = nn.functional.mse_loss(model(x), y)
loss.backward()
```

Use instead:
```python
import torch
from torch import nn

model = nn.Linear(8, 1)
x, y = torch.randn(16, 8), torch.randn(16, 1)
loss = nn.functional.mse_loss(model(x), y)
loss.backward()
```
""",
)
