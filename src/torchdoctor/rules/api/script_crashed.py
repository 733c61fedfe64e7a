"""TD001 script-crashed."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD001",
    name="script-crashed",
    category=Category.API,
    severity=Severity.ERROR,
    proof="run",
    message="the script stopped with {exception}",
    hint="Read the traceback above: this is the innermost line of your code it passed through.",
    doc="""
## What it does
Reports an uncaught exception that ended the script under `torchdoctor run` (or a
`torchdoctor.watch()` block) when no more specific rule explains it, at the innermost line
of your own code in the traceback (not a line inside torch or the standard library).
An exception raised in a DataLoader worker or a `torch.multiprocessing.spawn` child is
reported at the line of the worker's code that raised it.

## Why is this bad?
The script did not finish. Tracebacks through PyTorch are long, and the line to look at is
often in the middle of them; this finding names it.

## Example
```python
import torch

weights = {"fc": torch.ones(3)}
print(weights["head"])
```

Use instead:
```python
import torch

weights = {"fc": torch.ones(3)}
print(weights.get("head"))
```
""",
)
