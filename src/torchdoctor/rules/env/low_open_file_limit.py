"""TD614 low-open-file-limit."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD614",
    name="low-open-file-limit",
    category=Category.ENV,
    severity=Severity.INFO,
    proof="env",
    message='the open-file limit is {soft}{hard_note}: DataLoader workers share tensors through file descriptors',
    hint='{remedy}',
    doc="""
## What it does
Reads the soft limit on open files (`ulimit -n`) and flags it below 4096.

## Why is this bad?
On Linux, DataLoader workers pass each tensor to the main process as a file descriptor. With many
workers, large prefetching or many small tensors per batch, a limit of 1024 is reached: "Too many
open files" or "received 0 items of ancdata".

## Example
```json
{"limits": {"nofile_soft": 1024, "nofile_hard": 1048576}}
```

Use instead:
```json
{"limits": {"nofile_soft": 65536, "nofile_hard": 1048576}}
```
""",
)
