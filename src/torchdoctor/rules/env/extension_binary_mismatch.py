"""TD609 extension-binary-mismatch."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD609",
    name="extension-binary-mismatch",
    category=Category.ENV,
    severity=Severity.ERROR,
    proof="env",
    message='{package} cannot be imported: {error}',
    hint="Reinstall {package} built for torch {version} (this torch uses _GLIBCXX_USE_CXX11_ABI={abi}): `pip install --force-reinstall --no-cache-dir --no-build-isolation {package}` builds it against the installed torch; a prebuilt wheel must name the same torch, CUDA and ABI.",
    variants={
        # torch's C++ ABI is not known
        "abi-unknown": Variant(hint="Reinstall {package} built for torch {version}: `pip install --force-reinstall --no-cache-dir --no-build-isolation {package}` builds it against the installed torch; a prebuilt wheel must name the same torch, CUDA and ABI."),
    },
    doc="""
## What it does
Imports every installed package that requires torch and ships compiled code (flash-attn,
torch-scatter, xformers, apex, ...) in a fresh interpreter, and reports those that fail with a
binary error: an undefined symbol, a missing or incompatible shared library.

## Why is this bad?
Such packages link against torch's C++ symbols, which change with every torch release, CUDA build
and C++ ABI setting (`torch._C._GLIBCXX_USE_CXX11_ABI`). After a torch upgrade they fail with
"undefined symbol: _ZN3c10..." the first time they are imported, often deep inside a run.

## Example
```json
{"torch": {"importable": true, "version": "2.5.1+cu124", "cxx11_abi": false},
 "packages": {"imports": [{"module": "flash_attn_2_cuda", "package": "flash-attn", "ok": false,
   "error": "ImportError: /opt/venv/lib/python3.11/site-packages/flash_attn_2_cuda.cpython-311-x86_64-linux-gnu.so: undefined symbol: _ZN3c105ErrorC2ENS_14SourceLocationENSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE"}]}}
```

Use instead:
```json
{"torch": {"importable": true, "version": "2.5.1+cu124", "cxx11_abi": false},
 "packages": {"imports": [{"module": "flash_attn_2_cuda", "package": "flash-attn", "ok": true}]}}
```
""",
)
