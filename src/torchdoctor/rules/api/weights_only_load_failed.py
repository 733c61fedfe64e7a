"""TD421 weights-only-load-failed."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD421",
    name="weights-only-load-failed",
    category=Category.API,
    severity=Severity.ERROR,
    proof="run",
    message="torch.load refuses this checkpoint because it loads with weights_only=True by default since PyTorch 2.6: "
    "the checkpoint holds an object that is not a tensor, which the safe loader does not allow",
    hint="If you trust the file, pass `weights_only=False`; better, save and load `state_dict()`s, which load safely.",
    variants={  # by the global the message names (observe/crash/misc.py)
        "whole-module": Variant(
            message="torch.load refuses this checkpoint because it loads with weights_only=True by default since PyTorch "
            "2.6: the checkpoint holds a whole pickled module ({name}), saved with `torch.save(model)`",
            hint="If you trust the file, load it once with `torch.load(path, weights_only=False)` and re-save "
            "`model.state_dict()`; from then on save and load state_dicts only.",
        ),
        "global": Variant(
            message="torch.load refuses this checkpoint because it loads with weights_only=True by default since PyTorch "
            "2.6: the checkpoint holds {name}, which the safe loader does not allow",
            hint="If you trust the file: `torch.serialization.add_safe_globals([{cls}])` before loading, or "
            "`torch.load(path, weights_only=False)`; better, save only tensors and plain containers.",
        ),
    },
    doc="""
## What it does
Explains "Weights only load failed" from `torch.load`, naming what the checkpoint contains
that the safe loader refuses (a whole pickled module, a config class), and the two ways out.

## Why is this bad?
Since PyTorch 2.6, `torch.load` only unpickles tensors and plain containers unless told
otherwise, so checkpoints saved with `torch.save(model)` or holding custom objects no longer
load after an upgrade.

## Example
```python
import torch
from torch import nn

torch.save(nn.Linear(4, 2), "model.pt")
model = torch.load("model.pt")
```

Use instead:
```python
import torch
from torch import nn

torch.save(nn.Linear(4, 2).state_dict(), "model.pt")
model = nn.Linear(4, 2)
model.load_state_dict(torch.load("model.pt"))
```
""",
)
