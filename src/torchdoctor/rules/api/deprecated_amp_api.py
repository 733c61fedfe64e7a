"""TD167 deprecated-amp-api."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD167",
    name="deprecated-amp-api",
    category=Category.API,
    severity=Severity.INFO,
    unsafe_fix=True,
    proof="lint",
    message="`{old}` is deprecated (a FutureWarning since torch 2.4): use `{new}(\"{device}\", ...)`",
    hint="Replace it with `{new}(\"{device}\", ...)` (available since torch 2.3); `torchdoctor lint --fix --unsafe-fixes` rewrites spelled-out calls.",
    sees={
        "lint": "`torch.cuda.amp.GradScaler()` / `autocast()` (use `torch.amp`), except deliberate fallbacks for old torch versions",
    },
    doc="""
## What it does
Flags the device-specific mixed-precision entry points `torch.cuda.amp.GradScaler`,
`torch.cuda.amp.autocast`, `torch.cpu.amp.autocast`, `torch.cpu.amp.GradScaler` and
`torch.cuda.amp.custom_fwd/custom_bwd`. Not flagged where the old API is kept on purpose for
older torch versions: in a branch of a test on the torch version (`if torch_version < ...:`,
`if hasattr(torch, "amp"):`), in the `except` of a `try` that uses `torch.amp`, in the same
statement as `torch.amp`, or under a name that `try: from torch.amp import GradScaler` binds
(`except ImportError: from torch.cuda.amp import GradScaler`).

## Why is this bad?
They are deprecated in favour of the device-generic `torch.amp` API and print a
`FutureWarning` on every construction (verified on torch 2.13: "`torch.cuda.amp.GradScaler(args...)`
is deprecated. Please use `torch.amp.GradScaler('cuda', args...)` instead."). They still work
today; this is advice, before they are removed.

## Example
```python
import torch

scaler = torch.cuda.amp.GradScaler()
```

Use instead:
```python
import torch

scaler = torch.amp.GradScaler("cuda")
```

## Fix safety
The fix rewrites `torch.cuda.amp.X(...)` calls spelled out from the `torch` import into
`torch.amp.X("cuda", ...)`. It is offered as unsafe because `torch.amp.GradScaler` does not
exist before torch 2.3: apply it with `--unsafe-fixes` if you require torch >= 2.3.
""",
)
