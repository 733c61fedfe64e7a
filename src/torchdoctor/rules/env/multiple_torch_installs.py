"""TD606 multiple-torch-installs."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD606",
    name="multiple-torch-installs",
    category=Category.ENV,
    severity=Severity.WARNING,
    proof="env",
    message='{installs} torch installations are on sys.path; `import torch` loads {first} and hides {others}',
    hint='Uninstall the ones you do not use (`pip uninstall torch` until none is left, then install one; check `~/.local` with `pip list --user`), or stop putting their folder on PYTHONPATH.',
    doc="""
## What it does
Lists every folder on `sys.path` that contains a `torch` package.

## Why is this bad?
Only the first one is imported. The version pip reports, the one a package was built against and
the one that runs can all differ: a CUDA build in the environment can be hidden by a CPU build in
`~/.local`, or by a `PYTHONPATH` entry, and features or GPUs seem to vanish.

## Example
```json
{"packages": {"torch_installs": [
  {"path": "/home/ana/.local/lib/python3.11/site-packages/torch", "version": "2.1.0"},
  {"path": "/opt/venv/lib/python3.11/site-packages/torch", "version": "2.5.1+cu124"}]}}
```

Use instead:
```json
{"packages": {"torch_installs": [
  {"path": "/opt/venv/lib/python3.11/site-packages/torch", "version": "2.5.1+cu124"}]}}
```
""",
)
