"""TD605 torch-package-version-skew."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD605",
    name="torch-package-version-skew",
    category=Category.ENV,
    severity=Severity.ERROR,
    proof="env",
    message='{package} {package_version} was built for torch=={pinned}, but torch {version} is installed',
    variants={
        # its local version tag names another build (cu121 against cu118, cpu against a CUDA build)
        "other-build": Variant(message="{package} {package_version} is a {build} build, but torch {version} is installed"),
    },
    hint='Install the {package} release made for torch {version} from the same index as torch, e.g. `pip install {package} --index-url <the index torch came from>`; pip installs them together with `pip install torch {package}`.',
    doc="""
## What it does
Compares packages built against torch (torchvision, torchaudio, xformers, ...) with the installed
torch: the exact torch version each one pins (`Requires-Dist: torch==...` in its metadata), and the
build tag (`+cpu`, `+cu124`) of torchvision and torchaudio against torch's.

## Why is this bad?
These packages contain compiled operators linked against one torch release and one CUDA build.
Upgrading torch alone leaves them behind, and they fail at import or at the first call, with
messages such as "operator torchvision::nms does not exist" or "Could not run
'torchvision::nms' with arguments from the 'CUDA' backend".

## Example
```json
{"torch": {"importable": true, "version": "2.5.1+cu124", "cuda": "12.4"},
 "packages": {"versions": {"torchvision": "0.19.1+cu121"},
              "torch_pins": {"torchvision": "==2.4.1"}}}
```

Use instead:
```json
{"torch": {"importable": true, "version": "2.5.1+cu124", "cuda": "12.4"},
 "packages": {"versions": {"torchvision": "0.20.1+cu124"},
              "torch_pins": {"torchvision": "==2.5.1"}}}
```
""",
)
