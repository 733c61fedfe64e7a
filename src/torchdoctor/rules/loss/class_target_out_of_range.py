"""TD105 class-target-out-of-range."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD105",
    name="class-target-out-of-range",
    category=Category.LOSS,
    severity=Severity.ERROR,
    proof="check",
    message="class targets reach {max_label} but the model outputs {num_classes} classes (valid: 0..{last})",
    hint="Make num_classes match the labels (output size = max label + 1), remap the labels, or set ignore_index for padding labels such as -1/255.",
    variants={
        # a negative label the loss does not ignore (padding such as -1 without `ignore_index=-1`; check)
        "negative-label": Variant(message="class targets include {low}, which {loss} does not ignore (ignore_index={ignore}); the model outputs {num_classes} classes (valid: 0..{last})"),
        # a negative label: padding the loss does not ignore
        "ignore-label": Variant(hint="Label {max_label} is a padding/ignore label: pass `ignore_index={max_label}` to the loss (the default ignores only -100)."),
        # the labels were shifted at a line run found (`{made}` says where)
        "shifted": Variant(message="class targets reach {max_label} but the model outputs {num_classes} classes (valid: 0..{last}){made}", hint="`{shift}` shifts the labels out of 0..C-1: check it against the number of classes."),
        # the same, to a negative label
        "shifted-ignore-label": Variant(message="class targets reach {max_label} but the model outputs {num_classes} classes (valid: 0..{last}){made}", hint="Label {max_label} is a padding/ignore label: pass `ignore_index={max_label}` to the loss (the default ignores only -100)."),
    },
    doc="""
## What it does
Flags class-index targets outside `0 .. C-1`, where `C` is the number of classes the model
outputs (dimension 1 of the logits), that the loss does not ignore (`ignore_index`).

## Why is this bad?
On the CPU the loss raises `IndexError: Target 10 is out of bounds.`; on a GPU it fails with
an asynchronous "device-side assert triggered" that is reported at some later, unrelated line.
The usual causes are labels counted from 1, a forgotten class in the head, or padding labels
(-1, 255) without `ignore_index`.

## Example
```python
import torch
from torch import nn

def make():
    model = nn.Linear(8, 10)
    x, y = torch.randn(32, 8), torch.arange(32) % 10 + 1  # labels 1..10
    return {"model": model, "data": (x, y), "loss_fn": nn.CrossEntropyLoss()}
```

Use instead:
```python
import torch
from torch import nn

def make():
    model = nn.Linear(8, 10)
    x, y = torch.randn(32, 8), torch.arange(32) % 10  # labels 0..9
    return {"model": model, "data": (x, y), "loss_fn": nn.CrossEntropyLoss()}
```
""",
)
