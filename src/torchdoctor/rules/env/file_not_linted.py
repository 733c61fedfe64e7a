"""TD007 file-not-linted."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD007",
    name="file-not-linted",
    category=Category.ENV,
    severity=Severity.WARNING,
    proof="tool",
    message="not linted: {reason}",
    hint="Name the file on the command line to lint it whatever its size, repair or remove the link, or exclude "
         "the path (`--exclude`, `[tool.torchdoctor] exclude`) if it should not be linted.",
    sees={
        "lint": "a file met in a folder and skipped: over the 8 MB limit, a broken or looping link, a folder that cannot be listed",
    },
    doc="""
## What it does
Reports a Python file (or a folder) met while walking the folders given to `torchdoctor
lint` that was *not* linted: a file over the 8 MB limit for one file (generated code, as a
rule), a symbolic link that leads nowhere or to itself (a loop), a folder that cannot be
listed. (A file named on the command line is always linted, whatever its size; one that
cannot be read at all is TD003.)

## Why is this bad?
Nothing in that file was checked, and a run that looks clean may owe it to a file it never
read. The finding is in every report format (text, JSON, SARIF, GitHub, JUnit), so CI sees
the gap; it is a warning, so it does not fail the run by itself unless `--fail-on warning`.

## Example
```python
import os

os.mkdir("pkg")
os.symlink("missing.py", "pkg/train.py")  # a link that leads nowhere
```

Use instead:
```python
from pathlib import Path

Path("pkg").mkdir()
Path("pkg/train.py").write_text("import torch\\n")
```
""",
)
