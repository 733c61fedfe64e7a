"""TD002 script-killed-by-signal."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD002",
    name="script-killed-by-signal",
    category=Category.ENV,
    severity=Severity.ERROR,
    proof="run",
    # any other signal (run/summary.py picks a variant by the signal's name)
    message="the script's process was killed by {signal} (a crash in native code)",
    hint="Run `python -X faulthandler SCRIPT` to see the Python line, and check the installation with `torchdoctor env`.",
    variants={
        "sigkill": Variant(message="the script's process was killed by {signal} (usually the kernel's out-of-memory killer)",
                           hint="Check `dmesg` or the job's memory limit; use a smaller batch, fewer DataLoader workers or "
                           "a smaller model, and look for tensors kept across steps."),
        "sigbus": Variant(message="the script's process was killed by {signal} (often shared memory /dev/shm running out)",
                          hint="Give the container more shared memory (`docker run --shm-size=8g` or `--ipc=host`) or use "
                          "fewer DataLoader workers."),
        "sigsegv": Variant(hint="Run `python -X faulthandler SCRIPT` to see the Python line; check that torch, CUDA and "
                           "compiled extensions match (`torchdoctor env`)."),
    },
    doc="""
## What it does
Reports a script whose process was ended by a signal rather than by an exception or an exit
call: `SIGKILL` (usually the kernel's out-of-memory killer), `SIGSEGV`, `SIGBUS`, `SIGABRT`
or `SIGFPE` (a crash in native code). Ctrl-C and `SIGTERM` are reported as notes instead:
someone stopped the run on purpose.

## Why is this bad?
A process killed by a signal prints no Python traceback, so the log just stops. The signal
says where to look: memory limits for `SIGKILL`, shared memory for `SIGBUS`, a native
extension or a driver for `SIGSEGV`.

## Example
```python
import os
import signal

os.kill(os.getpid(), signal.SIGSEGV)
```

Use instead:
```python
import sys

sys.exit(0)
```
""",
)
