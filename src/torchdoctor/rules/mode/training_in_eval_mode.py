"""TD131 training-in-eval-mode."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD131",
    name="training-in-eval-mode",
    category=Category.MODE,
    severity=Severity.ERROR,
    proof="lint",
    message="{where}: the model is in eval mode while the optimizer steps, so dropout and batch-norm behave as at inference",
    hint="Call `model.train()` at the start of every training epoch (after each validation that calls `model.eval()`).",
    sees={
        "lint": "`model.eval()` in the training loop (or a validation it calls), or before it, with no way back to `train()`",
        "run": "`optimizer.step()` while dropout or trainable batch-norm of the trained model are in eval mode (the model itself is in eval mode); reported at the `model.eval()` that was not undone",
    },
    doc="""
## What it does
Flags optimizer steps taken while the model is in `eval()` mode. Statically: an epoch loop
that calls `model.eval()` (directly or in a validation function) and has no `model.train()`
on the way back to the next training step. At run time: an `optimizer.step()` while dropout
or batch-norm modules of the trained model have `training=False`. Lint leaves alone a model
frozen on purpose (put in `eval()` before the training loop, never optimized nor switched to
`train()`: a teacher, a feature extractor) and a function told which mode to run in
(`if mode == "train": model.train()` / `else: model.eval()`).

## Why is this bad?
`eval()` is sticky. After the first validation, dropout stays off and batch-norm stops
updating its statistics and normalises with stale ones for the rest of training: the model
overfits or trains worse than it should, and nothing warns you.

## Example
```python
def fit(model, train_loader, val_loader, loss_fn, optimizer, epochs):
    model.train()
    for epoch in range(epochs):
        for x, y in train_loader:
            optimizer.zero_grad()
            loss_fn(model(x), y).backward()
            optimizer.step()
        model.eval()
        for x, y in val_loader:
            print(loss_fn(model(x), y).item())
```

Use instead:
```python
import torch

def fit(model, train_loader, val_loader, loss_fn, optimizer, epochs):
    for epoch in range(epochs):
        model.train()
        for x, y in train_loader:
            optimizer.zero_grad()
            loss_fn(model(x), y).backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            for x, y in val_loader:
                print(loss_fn(model(x), y).item())
```
""",
)
