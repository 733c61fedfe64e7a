"""TD607 numpy-abi-mismatch."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD607",
    name="numpy-abi-mismatch",
    category=Category.ENV,
    severity=Severity.ERROR,
    proof="env",
    message='{module} was compiled against NumPy 1.x and cannot work with NumPy {numpy}: {error}',
    hint="Upgrade {module} to a release built for NumPy 2 (`pip install -U {package}`), or keep NumPy 1 (`pip install 'numpy<2'`) until it has one.",
    doc="""
## What it does
Watches NumPy's own warning ("A module that was compiled using NumPy 1.x cannot be run in NumPy
2...") while torch and each compiled torch extension are imported, and checks that a tensor can go
to NumPy and back.

## Why is this bad?
A binary built against NumPy 1 cannot use NumPy 2's C API: NumPy interop fails ("Numpy is not
available", "_ARRAY_API not found") or the process crashes, far from the import that caused it.

## Example
```json
{"torch": {"importable": true, "version": "2.2.2+cu121"},
 "packages": {"versions": {"numpy": "2.0.1"},
              "imports": [{"module": "torch_scatter", "package": "torch-scatter", "ok": true, "numpy1": true}]}}
```

Use instead:
```json
{"torch": {"importable": true, "version": "2.2.2+cu121"},
 "packages": {"versions": {"numpy": "1.26.4"},
              "imports": [{"module": "torch_scatter", "package": "torch-scatter", "ok": true}]}}
```
""",
)
