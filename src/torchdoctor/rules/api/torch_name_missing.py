"""TD574 torch-name-missing."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD574",
    name="torch-name-missing",
    category=Category.API,
    severity=Severity.ERROR,
    proof="lint",
    message="`{expr}`: `{module}` has no `{name}`{suggestion}, so this line raises AttributeError when it runs",
    hint="{fix}.",
    variants={
        "import": Variant(
            message="`from {module} import {name}`: `{module}` has no `{name}`{suggestion}, so the import raises ImportError",
            hint="{fix}.",
        ),
        "functional": Variant(
            message="`{alias}` is `torch.functional`, not `torch.nn.functional`: it has no `{name}`, so `{expr}` (line {use_line}) raises AttributeError when it runs",
            hint="Import `torch.nn.functional` (`import torch.nn.functional as F`).",
        ),
        "keyword": Variant(
            message="`{call}(...)` takes no keyword `{keyword}`{suggestion}: the call raises TypeError (unexpected keyword argument)",
            hint="{fix}, one of the keywords `{call}` takes.",
        ),
        "stft": Variant(
            message='`{call}(...)` without `return_complex=`: torch 2 refuses a real input without it (RuntimeError: "stft requires the return_complex parameter be given for real inputs")',
            hint="Pass `return_complex=True` (and `torch.view_as_real(...)` where the code reads the old real/imaginary layout).",
        ),
        "numpy-alias": Variant(
            message="`{expr}` was removed in NumPy 1.24 (it was the builtin `{builtin}`): AttributeError on NumPy 1.24 and later",
            hint="Use the builtin `{builtin}`, or a sized NumPy type such as `np.float64` / `np.int64`.",
        ),
    },
    sees={
        "lint": "an attribute of torch, torch.nn, torch.nn.functional, torch.nn.init, torch.optim, torch.utils.data, torchvision.transforms ... that no torch of its table has (called, or passed to a call), a `from ... import` of one, a keyword a torch function or class does not take, `torch.stft` without `return_complex`, a NumPy alias removed in 1.24; at that line, unless a `try` or a version test guards it",
    },
    doc="""
## What it does
Flags names and keywords that torch does not have: `nn.Layernorm` (for `nn.LayerNorm`),
`torch.from_tensor`, `transforms.HorizontalFlip` (for `RandomHorizontalFlip`), `F.softplus`
where `F` is `torch.functional` (not `torch.nn.functional`), `nn.init.normal_(w, stddev=0.01)`
(the keyword is `std`); `torch.stft(...)` without `return_complex`; and NumPy's aliases of
builtins removed in NumPy 1.24 (`np.float`, `np.int`, `np.object`, `np.str`, `np.complex`,
`np.unicode`). What exists comes from a table read off real torch and torchvision builds (`python
-m torchdoctor.dev torch-api`, in `linter/data/torch_api.json`; it says which versions): a name
is flagged only when every version of the table lacks it, and nothing is flagged when the
installed torch is newer than the table. An access inside a `try` that catches AttributeError
or ImportError, or under an `if` that tests `hasattr` or a version, is code written for several
versions and is left alone.

## Why is this bad?
Each of these raises the moment the line runs: `AttributeError: module 'torch.nn' has no
attribute 'Layernorm'`, `TypeError: normal_() got an unexpected keyword argument 'stddev'`,
`RuntimeError: stft requires the return_complex parameter be given for real inputs` (torch 2),
`AttributeError: module 'numpy' has no attribute 'float'`. When the line is in a branch that
runs late (evaluation after the first epoch, a flag that is rarely passed, the resume path),
the job dies hours in. Misspelt names and outdated signatures are how code written for an older
release meets a newer one.

## Example
```python
import numpy as np
import torch
import torch.functional as F
from torch import nn


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.Layernorm(dim)
        self.fc = nn.Linear(dim, dim)
        nn.init.normal_(self.fc.weight, stddev=0.01)

    def forward(self, x):
        return F.softplus(self.fc(self.norm(x)))


def spectrogram(audio):
    return torch.stft(audio, 400, hop_length=160, window=torch.hann_window(400)).abs()


positions = np.arange(16, dtype=np.float)
```

Use instead:
```python
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc = nn.Linear(dim, dim)
        nn.init.normal_(self.fc.weight, std=0.01)

    def forward(self, x):
        return F.softplus(self.fc(self.norm(x)))


def spectrogram(audio):
    return torch.stft(audio, 400, hop_length=160, window=torch.hann_window(400), return_complex=True).abs()


positions = np.arange(16, dtype=np.float64)
```
""",
)
