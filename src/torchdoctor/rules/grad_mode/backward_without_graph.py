"""TD416 backward-without-graph."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

NO_GRAPH = "backward() is called on a tensor that has no graph: "
GRAD_OFF_HINT = (
    "Compute `{name}` outside `{manager}` if it is a training loss (keep no_grad for evaluation); if it is an "
    "evaluation loss, do not call backward() on it. Do not set `{name}.requires_grad = True`: that silences the "
    "error and trains nothing."
)

RULE = Rule(
    code="TD416",
    name="backward-without-graph",
    category=Category.GRAD_MODE,
    severity=Severity.ERROR,
    proof="run",
    message="backward() is called on a tensor that has no graph: {why}",
    hint="Compute the loss from the model's output outside `torch.no_grad()`; never set `loss.requires_grad = True`, which silences the error and trains nothing.",
    variants={
        # what run saw of the crash, or read in the source of the function that called backward()
        "backward-under-grad-off": Variant(
            message=NO_GRAPH + "it was computed inside the block that turns gradients off at line {block_line}",
            hint="Move the training forward pass, the loss and backward() out of that block; keep `torch.no_grad()` for evaluation only."),
        # the block that turned autograd off around its assignment
        "under-grad-off": Variant(message=NO_GRAPH + "`{name}` was computed under the `{manager}` block at {lines}",
                                  hint=GRAD_OFF_HINT),
        # ...around the assignment of a name its own assignment reads (`loss = loss_fn(output, y)`)
        "from-grad-off": Variant(
            message=NO_GRAPH + "`{name}` is computed from `{source}`, which was computed under the `{manager}` block at {lines}",
            hint=GRAD_OFF_HINT.replace("{name}", "{source}")),
        # ...the decorator that turned it off for the function that assigns it
        "decorated": Variant(message=NO_GRAPH + "`{name}` was computed in a function decorated with `{manager}` (line {line})",
                             hint=GRAD_OFF_HINT.replace("{manager}", "{bare_manager}")),
        # ...a call or attribute in its assignment that leaves the graph (`.item()`, `torch.tensor(...)`)
        "cut": Variant(
            message=NO_GRAPH + "`{name}` is built at line {line} from `{cut}`: the graph was cut there",
            hint="Build `{name}` from the model's output with torch operations only (without `{cut}`). Do not set "
                 "`{name}.requires_grad = True`: that silences the error and trains nothing."),
        "inference-mode": Variant(
            message=NO_GRAPH + "it was computed under torch.inference_mode()",
            hint="Compute the training loss outside `torch.inference_mode()` (keep that for evaluation)."),
        "all-frozen": Variant(
            message=NO_GRAPH + "every parameter of the model is frozen (requires_grad=False)",
            hint="Unfreeze the layers you want to train (`requires_grad_(True)`) before building the optimizer."),
        "forward-without-grad": Variant(
            message=NO_GRAPH + "the model's forward pass ran with gradients disabled (inside torch.no_grad() or after torch.set_grad_enabled(False))",
            hint="Run the training forward pass outside `torch.no_grad()`; keep no_grad for evaluation only. Do not set `loss.requires_grad = True`: that silences the error and trains nothing."),
        "cut-on-the-way": Variant(
            message=NO_GRAPH + "it does not depend on any tensor that requires grad: the graph was cut on the way (`.item()`, `.numpy()`, `.detach()`, `.data` or `torch.tensor(...)` of a tensor), or the loss was computed under torch.no_grad()",
            hint="Build the loss from the model's output with torch operations only, outside `torch.no_grad()`. Do not set `loss.requires_grad = True`: that silences the error and trains nothing."),
    },
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
