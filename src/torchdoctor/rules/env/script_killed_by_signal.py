"""TD002 script-killed-by-signal."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD002",
    name="script-killed-by-signal",
    category=Category.ENV,
    severity=Severity.ERROR,
    proof="run",
    message="the script's process was killed by {signal}{detail}",
    hint="Check the memory limit of the job (`dmesg` shows the out-of-memory killer), and run `python -X faulthandler SCRIPT` to see where native code crashed.",
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
