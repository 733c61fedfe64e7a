"""TD171 requires-grad-on-loss."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD171",
    name="requires-grad-on-loss",
    category=Category.GRAD_FLOW,
    severity=Severity.ERROR,
    proof="lint",
    message="`{loss}` is made to require gradients by hand: it has no graph back to the model, so backward() runs and no parameter gets a gradient",
    hint="Find where the graph was cut (`.item()`, `.numpy()`, `.detach()`, `argmax`, `torch.tensor(...)`, `no_grad`) and compute the loss from the model's output tensors instead.",
    sees={
        "lint": "`loss.requires_grad = True` / `torch.tensor(loss.item(), requires_grad=True)`: the \"fix\" that trains nothing",
    },
    doc="""
## What it does
Flags `loss.requires_grad = True` and `torch.tensor(loss.item(), requires_grad=True)`: a loss
value turned into a leaf that requires gradients. (Assigning `requires_grad` is only allowed on
a leaf, so on a loss it succeeds exactly when the loss has no graph.)

## Why is this bad?
This is the usual "fix" for "element 0 of tensors does not require grad and does not have a
grad_fn", the error backward() raises when the loss is not connected to the model. It silences
the error and changes nothing else: the new leaf has no history, so backward() stops at it and
every parameter keeps `.grad == None`. Verified on torch 2.13: after `loss.requires_grad = True`
on a loss computed through `argmax`, and after `torch.tensor(loss.item(), requires_grad=True)`,
`backward()` leaves the weights' gradients `None`. Training runs and learns nothing.

## Example
```python
import torch

def train_step(model, x, y, optimizer):
    pred = model(x).argmax(dim=1).float()
    loss = torch.nn.functional.mse_loss(pred, y)
    loss.requires_grad = True
    loss.backward()
    optimizer.step()
```

Use instead:
```python
import torch

def train_step(model, x, y, optimizer):
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
```
""",
)
