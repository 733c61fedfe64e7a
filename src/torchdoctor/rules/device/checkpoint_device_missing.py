"""TD200 checkpoint-device-missing."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD200",
    name="checkpoint-device-missing",
    category=Category.DEVICE,
    severity=Severity.ERROR,
    proof="run",
    message="`torch.load` of {source} puts its tensors back on `{location}`, the device they were saved from, and {why}",
    hint='Say where the tensors should land: `torch.load(..., map_location="cpu")`, or `map_location=device` with the device the script chose (`"cuda" if torch.cuda.is_available() else "cpu"`).',
    variants={
        "mapped": Variant(
            message="`torch.load` of {source} was told `map_location={mapped}`, a CUDA device, and {why}",
            hint='Map to the device chosen at run time: `device = torch.device("cuda" if torch.cuda.is_available() else "cpu")`, then `torch.load(..., map_location=device)`.',
        ),
    },
    sees={
        "run": "the crash \"Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False\" of `torch.load` (directly or through a library's loader): the device the tensors were saved from or mapped to, and whether this torch is a CPU-only build; at the user's line that loads",
    },
    doc="""
## What it does
Explains the crash "Attempting to deserialize object on a CUDA device but
torch.cuda.is_available() is False" of `torch.load`: says which device the checkpoint's
tensors were saved from (or which CUDA device `map_location` sent them to), and why this
machine has none (a CPU-only build of torch, or a CUDA build that finds no GPU), at the user's
line that loads.

## Why is this bad?
A saved tensor remembers its device, and `torch.load` without `map_location` puts it back
there: a checkpoint written on a GPU machine fails to load on a laptop or a CPU-only CI
runner, before the script's own `.to(device)` can move it. The same happens when the script
writes the training machine's device into `map_location` (on torch 2.13, `torch.load(path,
map_location="cuda")` raises this on a machine without CUDA, even for a checkpoint saved from
the CPU).

## Example
```python
import torch

device = "cuda"  # the training machine's device, written down
model = torch.nn.Linear(4, 2)
torch.save(model.state_dict(), "model.pt")
model.load_state_dict(torch.load("model.pt", map_location=device))
```

Use instead:
```python
import torch

device = "cuda" if torch.cuda.is_available() else "cpu"
model = torch.nn.Linear(4, 2)
torch.save(model.state_dict(), "model.pt")
model.load_state_dict(torch.load("model.pt", map_location=device))
```
""",
)
