"""TD361 loader-unpacked-without-enumerate."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD361",
    name="loader-unpacked-without-enumerate",
    category=Category.DATA,
    severity=Severity.ERROR,
    proof="run",
    message="`for {target} in {loader}` unpacks each batch as (index, batch), but a DataLoader yields the batches alone: `{first}` takes the batch's first item, and `{inner}` is unpacked from its second (the labels, one value per sample)",
    hint="Count the batches with enumerate: `for {target} in enumerate({loader}):`.",
    sees={
        "run": "the crash \"too many values to unpack\" (or \"not enough\") of a `for i, (x, y) in loader:` whose loader is a DataLoader; at the `for` line",
    },
    doc="""
## What it does
Explains the crash "ValueError: too many values to unpack (expected 2)" of a loop written
`for i, (inputs, labels) in loader:` over a DataLoader, without `enumerate`.

## Why is this bad?
Iterating a DataLoader yields batches, here `[inputs, labels]`; the loop unpacks each as
`(index, batch)`: `i` takes the inputs and `(inputs, labels)` is unpacked from the labels
tensor, one value per sample, so on torch 2.13 it fails with "too many values to unpack" (and
with a batch of two labels, it silently trains on the labels as inputs).

## Example
```python
import torch
from torch.utils.data import DataLoader, TensorDataset

loader = DataLoader(TensorDataset(torch.randn(32, 4), torch.randint(0, 2, (32,))), batch_size=8)
for i, (x, y) in loader:
    print(i, x.shape)
```

Use instead:
```python
import torch
from torch.utils.data import DataLoader, TensorDataset

loader = DataLoader(TensorDataset(torch.randn(32, 4), torch.randint(0, 2, (32,))), batch_size=8)
for i, (x, y) in enumerate(loader):
    print(i, x.shape)
```
""",
)
