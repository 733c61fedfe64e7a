"""TD565 state-dict-keys-mismatch."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

_REFUSED = "`load_state_dict` refused the checkpoint for `{module}`: "

RULE = Rule(
    code="TD565",
    name="state-dict-keys-mismatch",
    category=Category.API,
    severity=Severity.ERROR,
    proof="run",
    message=_REFUSED + "its {given} keys are the model's with a `{prefix}` prefix (`{example}` for `{expected}`)",
    hint='Strip the prefix when loading: `model.load_state_dict({{k.removeprefix("{prefix}"): v for k, v in state.items()}})`.',
    variants={
        "dataparallel": Variant(
            message=_REFUSED + "its {given} keys are the model's with a `module.` prefix (`{example}` for `{expected}`): it was saved from a `DataParallel`/`DistributedDataParallel` model",
            hint='Strip the prefix when loading: `model.load_state_dict({{k.removeprefix("module."): v for k, v in state.items()}})`, or save `model.module.state_dict()` from now on.',
        ),
        "compiled": Variant(
            message=_REFUSED + "its {given} keys are the model's with an `_orig_mod.` prefix (`{example}` for `{expected}`): it was saved from a `torch.compile`d model",
            hint='Strip the prefix when loading: `model.load_state_dict({{k.removeprefix("_orig_mod."): v for k, v in state.items()}})`, or save `model._orig_mod.state_dict()` from now on.',
        ),
        "wrapped-model": Variant(
            message=_REFUSED + "the model's keys are the checkpoint's with a `{prefix}` prefix (`{expected}` for `{example}`): the model is a wrapper around the one that was saved",
            hint="Load into the wrapped model: `model.{inner}.load_state_dict(state)`.",
        ),
        "nested": Variant(
            message=_REFUSED + "its keys are {keys}, and the weights are under `[\"{key}\"]`: it is a whole checkpoint, not a state dict",
            hint='Load the weights themselves: `model.load_state_dict(checkpoint["{key}"])`.',
        ),
        "whole-model": Variant(
            message="`load_state_dict` was given a whole `{got}` model, not a state dict (a file saved with `torch.save(model)` loads as the model itself)",
            hint="Pass the model's weights, `.state_dict()` of it, or use the loaded model as it is; save `model.state_dict()` rather than the model from now on.",
        ),
        "method": Variant(
            message="`load_state_dict` was given the method `{got}` itself, not the state dict it returns: `.state_dict` without parentheses",
            hint="Call it: `.state_dict()`, where the weights are saved or handed over.",
        ),
        "sizes": Variant(
            message=_REFUSED + "{count} of its tensors have other shapes than the model's ({shapes}): the model was built with other sizes than the one that was saved",
            hint="Build the model with the checkpoint's sizes (the number of classes, the width). To reuse the rest under a new head, leave those keys out and load with `strict=False`: `model.load_state_dict({{k: v for k, v in state.items() if k not in {names}}}, strict=False)`.",
        ),
    },
    sees={
        "run": "the crash \"Expected state_dict to be dict-like\" given a whole model or the `state_dict` method, and the crash \"Error(s) in loading state_dict\" of a strict `load_state_dict`, when the keys show why (a `module.`/`_orig_mod.`/other prefix on the checkpoint's keys or on the model's, the weights nested in a whole checkpoint, tensors of other shapes); at the `load_state_dict` line",
    },
    doc="""
## What it does
Explains the crash "Error(s) in loading state_dict for ...: Missing key(s) ... Unexpected
key(s) ..." (and "size mismatch for ...") of a strict `load_state_dict`, from the keys torch
compared: the checkpoint's keys are the model's with a prefix (`module.` when it was saved
from `DataParallel` or `DistributedDataParallel`, `_orig_mod.` from a `torch.compile`d model),
the model's keys are the checkpoint's with a prefix (the model is a wrapper), the weights are
nested in a whole checkpoint (`{"epoch": ..., "state_dict": ...}`), or some tensors have other
shapes (a model built for another number of classes). It also explains "Expected state_dict
to be dict-like" when it was given a whole model (saved with `torch.save(model)`) or the
`state_dict` method itself (`.state_dict` without parentheses). It points at the `load_state_dict`
line, and stays silent (the crash is then TD001) when the keys show no such cause.

## Why is this bad?
torch lists every missing and unexpected key, often hundreds, and the cause is in a pattern
across them that the eye has to find: on torch 2.13, loading `nn.DataParallel(net).state_dict()`
into `net` says `Missing key(s) in state_dict: "weight", "bias". Unexpected key(s) in
state_dict: "module.weight", "module.bias".`

## Example
```python
import torch
from torch import nn

model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
torch.save(nn.DataParallel(model).state_dict(), "checkpoint.pt")

restored = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
restored.load_state_dict(torch.load("checkpoint.pt"))
```

Use instead:
```python
import torch
from torch import nn

model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
torch.save(nn.DataParallel(model).module.state_dict(), "checkpoint.pt")

restored = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
restored.load_state_dict(torch.load("checkpoint.pt"))
```
""",
)
