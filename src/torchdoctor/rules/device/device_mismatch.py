"""TD410 device-mismatch."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD410",
    name="device-mismatch",
    category=Category.DEVICE,
    severity=Severity.ERROR,
    proof="run",
    message="{first} is on {first_device} but {second} is on {second_device}{where}",
    hint="Put the model and every tensor it meets on one device: `model.to(device)` once, `.to(device)` for each batch, `device=` for tensors you create.",
    variants={
        # the crash, when the second tensor is a parameter (the first is the one to move)
        "first-off-model-device": Variant(hint="Move {first} to the model's device before the call: `.to({second_device!r})` (or create it there with `device=`)."),
        # the crash, when the first tensor is a parameter
        "second-off-model-device": Variant(hint="Move {second} to the model's device before the call: `.to({first_device!r})` (or create it there with `device=`)."),
        # the crash, when run cannot tell which side is the model's
        "both-devices": Variant(hint="Put both on one device: move the model once with `model.to(device)` after building it, and every batch with `.to(device)`; create new tensors with `device=`."),
        # a batch tensor left on the CPU while the rest is moved (lint)
        "unmoved-batch": Variant(message='`{name}` from the DataLoader is never moved to the device, but {others}: on a GPU `{use}` fails with "Expected all tensors to be on the same device" (on a CPU-only machine nothing shows)', hint="Move it with the others: `{name} = {name}.to(device)`."),
    },
    sees={
        "lint": "in a loop over a DataLoader whose other batch tensors and model are moved to the device, a batch tensor that reaches the model (first argument) or the loss never moved (`data, target = data, target.to(device)`); not lengths for `pack_padded_sequence`/CTC, nor a tensor moved at the call or later. A batch of one tensor counts when the same model is given a moved tensor elsewhere in the file (its evaluation batch, `torch.randn(...).to(device)`), unless a dataset may already hold device tensors (`TensorDataset(x.cuda())`, a move in `__getitem__` or a collate function)",
    },
    doc="""
## What it does
Explains the crash "Expected all tensors to be on the same device" (and its variants) at the
line of your code that made the failing call, naming the two tensors by their variable or
parameter names and their devices.

`torchdoctor lint` finds the commonest cause before running, even on a machine without a GPU,
where the program works: in a loop over a DataLoader, some batch tensors are moved
(`x.to(device)`, `.cuda()`) and the model is moved somewhere in the file (`model.to(device)`,
`model = Net().to(device)`), but another tensor of the same batch reaches the model as its first
argument, or the loss beside the model's output, without ever being moved
(`data, target = data, target.to(device)`). It points at the statement that last prepared the
tensor in the loop, else at the call. Left alone: a tensor moved later or at the call
(`model(x.to(device))`), one that is only a further argument of the model or goes to
`pack_padded_sequence` or a CTC loss (lengths stay on the CPU), a program that moves nothing
of the batch, a model never moved, and a file whose model moves its own input in `forward`.

## Why is this bad?
An operation needs all its tensors on one device. The usual causes are a batch not moved with
`.to(device)`, a tensor created inside `forward` without `device=`, a layer created after
`model.to(device)` or kept in a plain Python list (not moved with the model), and a loss
weight tensor left on the CPU.

## Example
```python
import torch
from torch import nn

device = "cuda" if torch.cuda.is_available() else "meta"  # "meta" stands in for a GPU here
model = nn.Linear(8, 2).to(device)
x = torch.randn(4, 8)
out = model(x)
```

Use instead:
```python
import torch
from torch import nn

device = "cuda" if torch.cuda.is_available() else "meta"
model = nn.Linear(8, 2).to(device)
x = torch.randn(4, 8, device=device)
out = model(x)
```
""",
)
