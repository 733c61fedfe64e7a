"""TD178 tensor-result-discarded."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD178",
    name="tensor-result-discarded",
    category=Category.API,
    severity=Severity.ERROR,
    proof="lint",
    fixable=False,
    message="`{expression}` computes {what} that is thrown away: the statement changes nothing",
    hint="{advice}.",
    sees={
        "lint": "an out-of-place torch op standing alone as a statement, its result thrown away: `torch.div(x, d)`, `F.dropout(x, ...)`, `grad.add(p, alpha=wd)`, `x.view(n, -1)`, `mask.masked_fill(m, 0)`, `x.clamp(0, 1)`, `frame * 0` (the in-place forms, `inplace=True`, a method of the class itself, functions of other modules, blocks that expect a failure (`try`, `pytest.raises`) and benchmark files are left alone)",
    },
    doc="""
## What it does
Flags a statement that computes a tensor and drops it: an out-of-place torch function
(`torch.div(x, d)`, `F.relu(x)`), an out-of-place tensor method (`x.view(n, -1)`,
`grad.add(p, alpha=wd)`, `mask.masked_fill(m, 0)`, `x.clamp(0, 1)`) or an arithmetic
expression (`frame * 0`) standing alone on its line.

## Why is this bad?
These operations return a new tensor and leave their inputs as they were. Written as a
statement, the line reads like an update and does nothing: the weight decay is never added,
the rescale never happens, the reshaped input is never used. Nothing fails; training runs on
the unchanged values.

## Example
```python
import torch


def decay(params, weight_decay):
    for p in params:
        p.grad.add(p, alpha=weight_decay)
```

Use instead:
```python
import torch


def decay(params, weight_decay):
    for p in params:
        p.grad.add_(p, alpha=weight_decay)
```

## Fix safety
No automatic fix: whether the result should be assigned or the in-place form called depends on
what the line meant (an in-place op on a tensor that autograd saved fails at backward).
""",
)
