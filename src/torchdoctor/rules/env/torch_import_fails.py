"""TD600 torch-import-fails."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD600",
    name="torch-import-fails",
    category=Category.ENV,
    severity=Severity.ERROR,
    proof="env",
    message='`import torch` fails: {error}',
    hint="Reinstall torch for this Python and platform (`pip install --force-reinstall torch`); the error above says which part is broken.",
    variants={
        "not-installed": Variant(hint="Install torch for this interpreter ({python} -m pip install torch)."),
        "shared-library": Variant(hint="A shared library torch needs is missing or another copy shadows it: check LD_LIBRARY_PATH and LD_PRELOAD, then reinstall torch in a clean environment (`pip install --force-reinstall torch`)."),
        "numpy": Variant(hint="Install a NumPy this torch was built for (`pip install 'numpy<2'` for torch older than 2.3), or upgrade torch."),
    },
    doc="""
## What it does
Imports torch in a fresh interpreter, exactly as a training script would, and reports the error
when it fails.

## Why is this bad?
Nothing else can run. The error often names a symptom far from the cause: an `undefined symbol`
means a library on the search path does not match the wheel, a missing `libcudnn.so` means the
wheel's CUDA packages are missing or shadowed, and a NumPy error means a binary built for another
NumPy.

## Example
```json
{"torch": {"importable": false,
           "import_error": "OSError: libcudnn.so.9: cannot open shared object file: No such file or directory"}}
```

Use instead:
```json
{"torch": {"importable": true, "version": "2.5.1+cu124", "cuda": "12.4"}}
```
""",
)
