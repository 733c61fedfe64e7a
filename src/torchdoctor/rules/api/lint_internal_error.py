"""TD005 lint-internal-error."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD005",
    name="lint-internal-error",
    category=Category.API,
    severity=Severity.ERROR,
    proof="tool",
    message="torchdoctor failed on part of this file ({error}); findings of {rule} here may be missing",
    hint="This is a limit or a bug of torchdoctor, not a problem in your code: please report it with the file (or a reduced copy); `--ignore {rule}` works around a failing rule.",
    sees={
        "lint": "a rule (or the walk) failed on this file; the other rules' findings are kept",
    },
    doc="""
## What it does
Reports that a lint rule, or the walk over the file, raised an exception on this file: a bug in
a rule, or code nested more deeply than the walk can follow (generated code with thousands of
terms in one expression). The other rules' findings for the file, and all other files, are
still reported.

## Why is this bad?
The findings for this file are incomplete. The command exits with status 2 (an internal
error) so that the gap is not mistaken for a clean result.

## Example
```python
from pathlib import Path

# generated code: one expression nested 20,000 levels deep
Path("generated.py").write_text("total = " + " + ".join(["x"] * 20000) + "\\n")
```

Use instead:
```python
from pathlib import Path

Path("generated.py").write_text("total = sum(x for _ in range(20000))\\n")
```
""",
)
