"""TD003 unreadable-file."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD003",
    name="unreadable-file",
    category=Category.ENV,
    severity=Severity.ERROR,
    proof="tool",
    message="cannot be read, so it was not linted: {error}",
    hint="Check the file's permissions, or the target of the symbolic link; exclude it if it should not be linted.",
    sees={
        "lint": "a named file that cannot be read (permissions, a link loop)",
    },
    doc="""
## What it does
Reports a file named on the command line that exists but cannot be read: no permission, a
symbolic link that leads nowhere or to itself (a loop), a file that vanished while the
command ran. (Inside folders, a broken link is reported as TD007 instead, and the run goes on.)

## Why is this bad?
Nothing in the file was checked. The command goes on with the other files and exits with
status 2, so CI does not pass over a file it never read.

## Example
```python
import os

os.symlink("loop.py", "loop.py")  # a link to itself
```

Use instead:
```python
from pathlib import Path

Path("loop.py").write_text("import torch\\n")
```
""",
)
