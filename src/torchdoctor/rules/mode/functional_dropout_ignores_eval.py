"""TD130 functional-dropout-ignores-eval."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD130",
    name="functional-dropout-ignores-eval",
    category=Category.MODE,
    severity=Severity.ERROR,
    proof="lint",
    fixable=True,
    message="`{call}` inside forward() has no `training=` argument: it keeps dropping activations after model.eval()",
    hint="Pass `training=self.training`, or use an `nn.Dropout` module, which follows train()/eval().",
    variants={
        # the dropout is in a method forward() calls
        "called-by-forward": Variant(message="`{call}` in `{method}()`, which forward() calls, has no `training=` argument: it keeps dropping activations after model.eval()"),
    },
    sees={
        "lint": "`F.dropout` without `training=` in a module's `forward` (or a method it calls), not under `if self.training:`; a sampling method under `no_grad` is left alone",
        "run": "`F.dropout(x, p)` without `training=` called from a module in eval mode; reported at the `F.dropout` line",
    },
    doc="""
## What it does
Flags `F.dropout` (and `dropout1d/2d/3d`, `alpha_dropout`, `feature_alpha_dropout`) called
without a `training=` argument in an `nn.Module`'s `forward()` (or a method named like it,
`forward_features`, `_forward_impl`), or in a method of the module that `forward()` calls.
Lint leaves alone a call inside `if self.training:` (there the default `training=True` is
right), and other methods: a sampling or generation method (often under `@torch.no_grad()`)
that applies dropout to its noise asks for it on every call.

## Why is this bad?
Functional dropout defaults to `training=True` and knows nothing about `model.eval()`. The
model keeps zeroing half its activations at evaluation and inference time: validation
scores are worse than they should be and two predictions for the same input differ.

## Example
```python
import torch.nn.functional as F
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 4)

    def forward(self, x):
        return self.fc(F.dropout(x, p=0.5))
```

Use instead:
```python
import torch.nn.functional as F
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 4)

    def forward(self, x):
        return self.fc(F.dropout(x, p=0.5, training=self.training))
```

## Fix safety
The fix adds `training=self.training`, which is what `nn.Dropout` does. It is safe unless
the dropout was meant to stay on at inference (Monte Carlo dropout); then write
`training=True` explicitly to say so.
""",
)
