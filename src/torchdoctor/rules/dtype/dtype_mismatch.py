"""TD411 dtype-mismatch."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD411",
    name="dtype-mismatch",
    category=Category.DTYPE,
    severity=Severity.ERROR,
    proof="run",
    message="{first} is {first_dtype} but {second} is {second_dtype}{where}",
    hint="Convert the odd one out where it is created: `.float()` for float64 data that comes from NumPy or from Python floats.",
    variants={
        # the crash, when run found the line that converted the odd tensor (`{where}` says where)
        "converted": Variant(hint="`{conversion}` makes it {made}: make it {want} there instead (`.to(torch.{want})`, `dtype=torch.{want}`) or drop the conversion; run the model in {made} only on purpose (`model.to(torch.{made})`)."),
        # the crash, with a float64 side
        "float64": Variant(hint="Convert {culprit} with `.float()` where it is created: float64 comes from NumPy arrays (`torch.from_numpy`), Python floats batched by the default collate, or `torch.tensor(list_of_floats, dtype=torch.float64)`."),
        # the crash, with two other dtypes
        "mixed": Variant(hint="Convert one side so both match (`.to(other.dtype)`), or run the mixed-precision region under `torch.autocast`."),
        # token ids converted to floats before an embedding
        "embedding-indices": Variant(hint="Token ids must stay whole numbers: drop the conversion, or convert them with `.long()`."),
        # the same, at a line run found
        "embedding-indices-converted": Variant(hint="Token ids must stay whole numbers: drop the conversion at {place} (`{conversion}`), or convert them with `.long()`."),
    },
    sees={
        "lint": "a tensor converted to float64 (`x.double()`, `x.to(torch.float64)`, at the call or in the assignment of the name passed) given to a model that nothing in the file makes float64 (`model.double()`, `dtype=` layers, `.to(dtype)`, `set_default_dtype`, a dtype in a string all silence the file); not a model whose `forward()` converts its input",
    },
    doc="""
## What it does
Explains crashes such as "mat1 and mat2 must have the same dtype, but got Double and Float",
"Input type (double) and bias type (float) should be the same" or an RNN's "RNN input dtype
(torch.float64) does not match weight dtype (torch.float32)", naming both tensors and their
dtypes. It points at the line of your code that made the tensor of the wrong dtype
(`data = data.double()` in the training loop, `model(x.to(torch.float64))`,
`torch.from_numpy(float64_array)`) when that line can be read for certain from the failing
frames, with the crashing line in the message; otherwise at the line that made the call.

`torchdoctor lint` finds the commonest form before anything runs: a tensor converted to
float64 (`x.double()`, `x.to(torch.float64)`, in the call or in the assignment of the name it
passes) given to a model that nothing in the file makes float64 (no `model.double()`,
`self.double()`, layer built with `dtype=`, `.to(dtype)` of the model, `set_default_dtype`,
dtype named in a string). A model class of the file whose `forward()` converts its input
(`x.float()`) is left alone.

## Why is this bad?
Layers keep their weights in float32; data from NumPy (`torch.from_numpy`) or from Python
floats batched by the default collate is float64, so the first layer fails. (Older PyTorch
said "expected scalar type Float but found Double".)

## Example
```python
import numpy as np
import torch
from torch import nn

features = np.random.rand(16, 8)  # NumPy arrays are float64
model = nn.Linear(8, 1)
out = model(torch.from_numpy(features))
```

Use instead:
```python
import numpy as np
import torch
from torch import nn

features = np.random.rand(16, 8)
model = nn.Linear(8, 1)
out = model(torch.from_numpy(features).float())
```
""",
)
