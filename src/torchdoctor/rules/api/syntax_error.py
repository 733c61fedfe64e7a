"""TD000 syntax-error."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD000",
    name="syntax-error",
    category=Category.API,
    severity=Severity.ERROR,
    proof="lint",
    message="not valid Python, so it was not linted: {error}",
    hint="Fix the syntax error (run `python -m py_compile {path}` to see it), or exclude the file if it is not meant to be Python 3.",
    variants={
        "newer-syntax": Variant(
            message="needs Python {needs} or newer: {construct} is syntax this Python ({running}) cannot parse, so the "
            "file was not linted",
            hint="Run torchdoctor with Python {needs} or newer (the interpreter this code is written for), or exclude the file.",
        ),
    },
    sees={
        "lint": "a file that does not parse (reported; the others are still linted); syntax of a newer Python (PEP 695 generics on 3.11) names the version the file needs",
    },
    doc="""
## What it does
Reports a file that `torchdoctor lint` could not parse, with the line and column of the
syntax error, and goes on with the other files.

## Why is this bad?
Nothing in the file was checked. The command exits with status 2 (the tool could not do its
whole job) so that CI does not pass silently over a file it never read. A file that is not
meant to be Python 3 (a template, a Python 2 leftover) belongs in `exclude`.

A file written for a newer Python than the one running torchdoctor (a PEP 695 generic
`def f[T](x: T) -> T`, `class C[T]`, `type X = int` on Python 3.11; `except*` on 3.10) does not
parse either, but it is not broken: the finding then says which Python version it needs and
the construct at that line. Run torchdoctor with that Python (or newer) to lint it.

## Example
```python
def train(model, loader):
    for x, y in loader
        model(x)
```

Use instead:
```python
def train(model, loader):
    for x, y in loader:
        model(x)
```
""",
)
