"""TD150 softmax-implicit-dim."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD150",
    name="softmax-implicit-dim",
    category=Category.API,
    severity=Severity.WARNING,
    proof="lint",
    message="`{call}` without `dim=`: PyTorch guesses the dimension (dim 0, the batch, for 1-D and 3-D inputs)",
    hint="Say which dimension holds the classes: `dim=-1` (or `dim=1` for (N, C, ...) inputs).",
    sees={
        "lint": "`F.softmax(x)` / `nn.Softmax()` without `dim`",
    },
    doc="""
## What it does
Flags `F.softmax`, `F.log_softmax`, `F.softmin` and `nn.Softmax()`, `nn.LogSoftmax()`,
`nn.Softmin()` called without `dim`.

## Why is this bad?
Without `dim`, PyTorch picks one from the number of dimensions of the input: dim 0 for 0-, 1-
and 3-D tensors, dim 1 otherwise. For a `(batch, seq, classes)` tensor that is the batch
dimension: the "probabilities" then sum to 1 across the samples of the batch, and each
prediction depends on the others. PyTorch only warns "Implicit dimension choice for softmax
has been deprecated".

## Example
```python
import torch.nn.functional as F

def predict(model, x):
    return F.softmax(model(x))
```

Use instead:
```python
import torch.nn.functional as F

def predict(model, x):
    return F.softmax(model(x), dim=-1)
```
""",
)
