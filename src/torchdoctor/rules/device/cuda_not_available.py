"""TD201 cuda-not-available."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

_HINT = 'Choose the device at run time and use it everywhere: `device = torch.device("cuda" if torch.cuda.is_available() else "cpu")`, then `.to(device)` instead of `.cuda()` or `"cuda"`; on a machine with an NVIDIA GPU, install a CUDA build of torch instead (pytorch.org/get-started).'

RULE = Rule(
    code="TD201",
    name="cuda-not-available",
    category=Category.DEVICE,
    severity=Severity.ERROR,
    proof="run",
    message="`{call}` asks for a CUDA device, and {why}",
    hint=_HINT,
    variants={
        "no-call": Variant(
            message="this line asks for a CUDA device, and {why}",
            hint=_HINT,
        ),
    },
    sees={
        "run": "the crashes \"Torch not compiled with CUDA enabled\" (a CPU-only build) and \"Found no NVIDIA driver on your system\" (a CUDA build without a GPU) of `.cuda()`, `.to(\"cuda\")`, `device=\"cuda\"` or `torch.cuda.FloatTensor` on a CPU-only build of torch: the call on the user's line that asks for CUDA; at that line",
    },
    doc="""
## What it does
Explains the crash "Torch not compiled with CUDA enabled" (an `AssertionError`, or a
`TypeError` for `torch.cuda.FloatTensor`) and, on a CUDA build of torch without a GPU, "Found
no NVIDIA driver on your system": names the call on the user's line that asks for
CUDA (`.cuda()`, `.to("cuda")`, `device="cuda"`) and says that the installed torch is a
CPU-only build.

## Why is this bad?
A script written on a GPU machine moves its model and data with `.cuda()` or `"cuda"`; on a
laptop, a Mac or a CPU-only CI runner the CPU build of torch has no CUDA, and the first such
call fails (on torch 2.13's CPU wheel, `torch.randn(2).cuda()` raises the error above). The
script runs everywhere once its device is chosen at run time.

## Example
```python
import torch

model = torch.nn.Linear(4, 2).cuda()
out = model(torch.randn(3, 4).cuda())
```

Use instead:
```python
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(4, 2).to(device)
out = model(torch.randn(3, 4).to(device))
```
""",
)
