"""TD614 low-open-file-limit."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD614",
    name="low-open-file-limit",
    category=Category.ENV,
    severity=Severity.INFO,
    proof="env",
    message='the open-file limit is {soft} (the hard limit allows {hard}): DataLoader workers share tensors through file descriptors',
    hint="Raise it before training: `ulimit -n {raise_to}`; or call torch.multiprocessing.set_sharing_strategy('file_system').",
    variants={
        # the hard limit is the soft one (or unknown): raising it takes an administrator
        "at-hard-limit": Variant(message="the open-file limit is {soft}: DataLoader workers share tensors through file descriptors",
                                 hint="Ask for a higher limit (/etc/security/limits.conf, or the container's --ulimit nofile=65536), or call torch.multiprocessing.set_sharing_strategy('file_system')."),
    },
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
