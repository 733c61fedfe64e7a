"""TD004 undecodable-source."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD004",
    name="undecodable-source",
    category=Category.API,
    severity=Severity.ERROR,
    proof="lint",
    message="cannot be read as Python source, so it was not linted: {error}",
    hint="Save the file as UTF-8 (or declare its encoding with a `# -*- coding: ... -*-` line); exclude it if it is not Python.",
    sees={
        "lint": "not text in its declared encoding, or binary",
    },
    doc="""
## What it does
Reports a file whose bytes are not text in the encoding Python would use for it (UTF-8 unless a
BOM or a `# -*- coding: ... -*-` line says otherwise), or that contains NUL bytes (a binary file
with a `.py` name).

## Why is this bad?
Python itself refuses to import such a file, and nothing in it was checked. The command goes on
with the other files and exits with status 2.

## Example
```python
# -*- coding: ascii -*-
LABEL = "café"
```

Use instead:
```python
# -*- coding: utf-8 -*-
LABEL = "café"
```
""",
)
