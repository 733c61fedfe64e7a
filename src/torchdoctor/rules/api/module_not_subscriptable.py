"""TD577 module-not-subscriptable."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD577",
    name="module-not-subscriptable",
    category=Category.API,
    severity=Severity.ERROR,
    proof="run",
    message="`{owner}` is one `{type}` module, not a list of them: `{indexed}` indexes it",
    hint="Call the module itself (`{owner}(...)`), or build one per index and keep them in an `nn.ModuleList` (`nn.ModuleList([{type}(...) for _ in range(n)])`) to index that.",
    sees={
        "run": "the crash \"'Net' object is not subscriptable\" when the one module indexed on the user's line (an attribute chain) is of the type the message names; at the user's line",
    },
    doc="""
## What it does
Explains the crash "TypeError: 'L1LossMasked' object is not subscriptable" when your line
indexes one of your modules (`self.losses[i](...)`) as if it held several: it names the module
and its type, at the user's line.

## Why is this bad?
A module is one layer (or one loss), not a container: `nn.ModuleList` and `nn.Sequential` can
be indexed, a plain `nn.Module` cannot. The line was usually written for a list of modules (one
per scale, per head) while `__init__` built a single one, or the other way round.

## Example
```python
import torch
from torch import nn


class MultiScale(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = nn.Linear(8, 2)

    def forward(self, features):
        return [self.heads[i](x) for i, x in enumerate(features)]


print(MultiScale()([torch.randn(2, 8), torch.randn(2, 8)]))
```

Use instead:
```python
import torch
from torch import nn


class MultiScale(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = nn.ModuleList([nn.Linear(8, 2) for _ in range(2)])

    def forward(self, features):
        return [self.heads[i](x) for i, x in enumerate(features)]


print(MultiScale()([torch.randn(2, 8), torch.randn(2, 8)]))
```
""",
)
