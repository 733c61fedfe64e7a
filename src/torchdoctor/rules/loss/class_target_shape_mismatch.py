"""TD418 class-target-shape-mismatch."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD418",
    name="class-target-shape-mismatch",
    category=Category.LOSS,
    severity=Severity.ERROR,
    proof="run",
    message="{loss} cannot pair input and target: the target has shape {got} but the input implies {want}",
    hint="CrossEntropyLoss and NLLLoss take logits of shape (N, C, ...) with the classes in dim 1, and class indices of shape (N, ...).",
    variants={
        # (batch, positions, classes) logits given as they are
        "classes-last": Variant(message="{loss} cannot pair input and target: the logits are {shape} = (batch, positions, classes) but the loss reads classes from dim 1", hint="Move the classes to dim 1 with `logits.transpose(1, 2)`, or flatten both: `loss(logits.reshape(-1, C), target.reshape(-1))`."),
        # input and target hold different numbers of samples
        "batch-sizes-differ": Variant(message="{loss} cannot pair input and target: the input has {rows} rows but the target {targets}", hint="A reshape in the model mixes samples: flatten with `x.flatten(1)` or `x.view(x.size(0), -1)` instead of `x.view(-1, features)`, and check the input size the model was built for."),
        # a target of the input's shape holding integers
        # the same, with the one `x.view(-1, n)` of the model's forward that folds each sample into several rows
        "folded-batch": Variant(message="{loss} cannot pair input and target: the input has {rows} rows but the target {targets}; `{call}` in `{cls}.forward` folds each sample into {fold} rows{crashed}", hint="Flatten per sample: `torch.flatten(x, 1)` (or `x.view(x.size(0), -1)`), and build the Linear after it for the real number of features per sample (or use `nn.LazyLinear`)."),
        # class indices of shape (N, 1) ("0D or 1D target tensor expected, multi-target not supported")
        "column-target": Variant(message="{loss} cannot pair input and target: `{name}` has shape {got}, a column of class indices, but the target of {rows}-row logits must be 1-D", hint="Drop its extra dimension: `{name}.squeeze(1)` (or `{name}.view(-1)`); labels taken from a table column or built with shape (N, 1) have it."),
        "float-column-target": Variant(message="{loss} cannot pair input and target: `{name}` has shape {got}, a column of class indices stored as floats, but the target of {rows}-row logits must be 1-D and of integers", hint="Make it a vector of class indices: `{name}.squeeze(1).long()`; labels read from a table or a NumPy float array come as (N, 1) floats."),
        "integer-probabilities": Variant(message="{loss} cannot pair input and target: the target has the input's shape, so it is read as class probabilities, but it holds integers (one-hot labels?)", hint="Pass class indices instead (`target.argmax(dim=1)`), or one-hot probabilities as floats (`target.float()`)."),
    },
    doc="""
## What it does
Explains the crashes "Expected target size [32, 50], got [32, 100]", "Expected input
batch_size (32) to match target batch_size (16)" and "Expected floating point type for target
with class probabilities, got Long" from `CrossEntropyLoss` / `NLLLoss`, and "0D or 1D target
tensor expected, multi-target not supported" for class indices of shape (N, 1): sequence logits
with the classes in the last dimension, a reshape that mixes samples in the model, one-hot
integer targets.

## Why is this bad?
The loss reads the classes from dimension 1. Sequence models produce (batch, positions,
classes), which must be transposed or flattened first; a `view(-1, features)` with the wrong
feature count silently changes the batch size.

## Example
```python
import torch
from torch import nn

logits = torch.randn(8, 20, 100)  # (batch, positions, vocabulary)
targets = torch.randint(0, 100, (8, 20))
loss = nn.CrossEntropyLoss()(logits, targets)
```

Use instead:
```python
import torch
from torch import nn

logits = torch.randn(8, 20, 100)
targets = torch.randint(0, 100, (8, 20))
loss = nn.CrossEntropyLoss()(logits.transpose(1, 2), targets)
```
""",
)
