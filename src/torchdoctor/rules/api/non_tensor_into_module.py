"""TD560 non-tensor-into-module."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD560",
    name="non-tensor-into-module",
    category=Category.API,
    severity=Severity.ERROR,
    proof="run",
    message="{layer} is given `{name}`, a NumPy array ({dtype}, shape {shape}), not a tensor",
    hint="Convert it before the model: `torch.from_numpy({name}){conversion}` (a DataLoader over a Dataset that returns arrays does this for you).",
    variants={
        # a Python list (or tuple) of numbers
        "list": Variant(
            message="{layer} is given `{name}`, a Python {container} of numbers, not a tensor",
            hint="Convert it before the model: `torch.tensor({name}, dtype=torch.float32)` (class indices for an embedding: `dtype=torch.long`).",
        ),
        # the batch a DataLoader yields, (inputs, labels), given whole to the model
        "batch": Variant(
            message="{layer} is given `{name}`, a {container} of {count} tensors (shapes {shapes}), not a tensor",
            hint="A DataLoader yields each batch as (inputs, labels): unpack it (`for inputs, labels in loader:`) and give the model `inputs` only.",
        ),
        # a list (or tuple) of tensors, with no DataLoader in the run
        "tensors": Variant(
            message="{layer} is given `{name}`, a {container} of {count} tensors (shapes {shapes}), not a tensor",
            hint="Stack them into one tensor first (`torch.stack({name})` for samples of one shape, `torch.cat({name})` to join batches).",
        ),
    },
    sees={
        "run": "the crash of a module called with a NumPy array, a Python list of numbers, or a whole (inputs, labels) batch (\"linear(): argument 'input' (position 1) must be Tensor, not numpy.ndarray\", \"conv2d() received an invalid combination of arguments\"), at the line of yours that passed it",
    },
    doc="""
## What it does
Explains the crashes of a module called with something that is not a tensor:
"linear(): argument 'input' (position 1) must be Tensor, not numpy.ndarray", "conv2d()
received an invalid combination of arguments - got (list, Parameter, ...)", "'numpy.ndarray'
object has no attribute 'dim'". It names the layer that refused it, what it was (a NumPy array
and its dtype, a list of numbers, or a whole `(inputs, labels)` batch from a DataLoader) and
points at the line of yours that passed it in.

## Why is this bad?
The message names an aten function and a type, often in a page of overloads, deep inside the
model. The fix is at the call: convert the data with `torch.from_numpy(...)` (and `.float()`:
NumPy arrays are float64, the layers float32), or unpack the batch.

## Example
```python
import numpy as np
import torch
from torch import nn

model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
features = np.random.rand(16, 4)
prediction = model(features)
```

Use instead:
```python
import numpy as np
import torch
from torch import nn

model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
features = np.random.rand(16, 4)
prediction = model(torch.from_numpy(features).float())
```
""",
)
