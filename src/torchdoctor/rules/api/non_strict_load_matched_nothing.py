"""TD427 non-strict-load-matched-nothing."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD427",
    name="non-strict-load-matched-nothing",
    category=Category.API,
    severity=Severity.ERROR,
    proof="run",
    message="`load_state_dict(..., strict=False)` loaded nothing into `{module}`: none of the {expected} it expects is among the {given} given{why}, so it keeps the weights it had (random ones, for a new model)",
    hint="{remedy} Keep `strict=False` only for a deliberate partial load, and check what it returns: `missing, unexpected = model.load_state_dict(state, strict=False)`.",
    sees={
        "run": "`load_state_dict(state, strict=False)` whose checkpoint keys all come back unexpected while the model expects keys, so nothing is loaded; names the cause it can see (a `module.`/`model.`/`_orig_mod.` prefix on either side, weights nested under `state[\"state_dict\"]`); reported at the `load_state_dict` line",
    },
    doc="""
## What it does
At run time, reports a `model.load_state_dict(state, strict=False)` that loaded nothing: the
model expects keys, the checkpoint has keys, and every one of them comes back as unexpected.
It says why when the keys show it: a
`module.` prefix (saved from `DataParallel`/`DistributedDataParallel`), `model.`
(a Lightning module), `_orig_mod.` (a `torch.compile`d model), the same prefix on the model's
keys instead (a wrapped model given its inner model's weights), or a whole checkpoint whose
weights sit under one of its keys (`checkpoint["state_dict"]`). It points at the
`load_state_dict` line.

A partial load is left alone (a backbone loaded into a model with a new head, pretrained
embeddings only: some keys match), as are an empty dict, a module without state, and a load
that the program retries: a later load into the same model (or into its wrapper, or a part of
it) that does match keys drops the finding. Strict loads raise on their own.

## Why is this bad?
`strict=False` turns every key mismatch into a silent no-op. On torch 2.13, loading the
`state_dict()` of an `nn.DataParallel` model (keys `module.0.weight`, ...) into the plain
model with `strict=False` prints nothing, leaves every weight unchanged and returns
`_IncompatibleKeys(missing_keys=[all the model's keys], unexpected_keys=[all the
checkpoint's keys])`. The model then evaluates, or is fine-tuned, from its random
initialisation, and the only symptom is a poor accuracy. (Batch norm's
`num_batches_tracked` is never listed as missing: torch fills it in when a checkpoint lacks
it.)

## Example
```python
import torch
from torch import nn

def make():
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))

state = nn.DataParallel(make()).state_dict()   # keys "module.0.weight", ...

model = make()
model.load_state_dict(state, strict=False)      # matches nothing, loads nothing
print(model(torch.randn(3, 4)))
```

Use instead:
```python
import torch
from torch import nn

def make():
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))

state = nn.DataParallel(make()).state_dict()

model = make()
model.load_state_dict({k.removeprefix("module."): v for k, v in state.items()})
print(model(torch.randn(3, 4)))
```

## References
- [`Module.load_state_dict`](https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.load_state_dict)
- TD160 non-strict-load-ignored: `lint` flags the same call whose result is never looked at.
""",
)
