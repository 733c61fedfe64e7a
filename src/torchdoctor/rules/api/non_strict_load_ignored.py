"""TD160 non-strict-load-ignored."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD160",
    name="non-strict-load-ignored",
    category=Category.API,
    severity=Severity.WARNING,
    proof="lint",
    message="`{target}.load_state_dict(..., strict=False)` ignores its result: if no key matched, the model silently keeps its random weights",
    hint="Check what was loaded: `missing, unexpected = {target}.load_state_dict(state, strict=False)` and fail (or log) when they are not the keys you expect.",
    sees={
        "lint": "`load_state_dict(torch.load(...), strict=False)` whose missing/unexpected keys are never looked at (not when an assertion checks the result, or for adapter + base loads that complement each other)",
    },
    doc="""
## What it does
Flags `load_state_dict(..., strict=False)` used as a statement, so that the missing and
unexpected keys it returns are never looked at, when the state dict was read from a file in
the same function. Left alone: a load that the function checks afterwards (an `assert` or an
`assert_close` on the model follows), and partial loads that complement each other (the adapter's weights
from one file and the base model's from another, each `strict=False`, into the same model).

## Why is this bad?
`strict=False` turns every mismatch into a no-op. A checkpoint saved from a
`DataParallel`/`DistributedDataParallel` model (keys `module.*`), a Lightning module
(`model.*`) or a compiled one (`_orig_mod.*`) then loads *nothing*: the call returns
`_IncompatibleKeys(missing_keys=[...all...], unexpected_keys=[...all...])`, no warning is
printed, and fine-tuning starts from random weights.

## Example
```python
import torch

def restore(model, path):
    state = torch.load(path, map_location="cpu", weights_only=True)
    model.load_state_dict(state, strict=False)
```

Use instead:
```python
import torch

def restore(model, path):
    state = torch.load(path, map_location="cpu", weights_only=True)
    missing, unexpected = model.load_state_dict(state, strict=False)
    if unexpected or len(missing) == len(model.state_dict()):
        raise ValueError(f"checkpoint does not fit: missing {missing}, unexpected {unexpected}")
```
""",
)
