"""TD471 float64-ops-in-float32-model."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD471",
    name="float64-ops-in-float32-model",
    category=Category.PERFORMANCE,
    severity=Severity.WARNING,
    proof="trace",
    message="{ops} run in float64 on this line ({share} of each traced step's compute) while the model's parameters are float32",
    hint="Find where float64 enters (a NumPy array through `torch.from_numpy`, `torch.tensor` of Python floats with dtype=torch.float64, a `.double()`) and convert it once to float32 where it is created, instead of computing in float64 and casting back.",
    doc="""
## What it does
`torchdoctor trace` records the dtypes of every op each line of the script dispatched. When
the trained parameters are float32, it reports a line whose compute ops (not conversions,
copies or views), or their backward, ran in float64 for at least a tenth of the op time of a
traced step (read against the step's compute: its ops outside the DataLoader's fetches and torchdoctor's own, on the same clock,
step by step; the median over the traced steps). A Python number in a float32 op (Adam's bias
corrections) is not float64 compute. A model
trained in float64 throughout is not reported.

## Why is this bad?
float64 is the default of NumPy and of Python floats, and it spreads: one float64 tensor in an
expression makes the result float64. On GPUs float64 runs many times slower than float32
(consumer cards: 32 to 64 times), on CPUs at half the vector width, and it takes twice the
memory. A `.double()` added to silence "mat1 and mat2 must have the same dtype" and a
`.float()` at the end hide it from dtype checks on the output, but not from the clock.

## Example
```python
import numpy as np
import torch
from torch import nn

torch.manual_seed(0)
rng = np.random.default_rng(0)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(64, 256)
        # a fixed random projection made with NumPy: float64
        self.register_buffer("projection", torch.from_numpy(rng.standard_normal((256, 256)) / 16))
        self.head = nn.Linear(256, 1)

    def forward(self, x):
        h = torch.relu(self.body(x))
        h = (h.double() @ self.projection).float()  # casts added to get past the dtype error
        return self.head(h)


model = Model()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(256, 64), torch.randn(256, 1)
for step in range(12):
    optimizer.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
```

Use instead:
```python
import numpy as np
import torch
from torch import nn

torch.manual_seed(0)
rng = np.random.default_rng(0)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(64, 256)
        self.register_buffer("projection", torch.from_numpy(rng.standard_normal((256, 256)) / 16).float())
        self.head = nn.Linear(256, 1)

    def forward(self, x):
        h = torch.relu(self.body(x))
        h = h @ self.projection
        return self.head(h)


model = Model()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(256, 64), torch.randn(256, 1)
for step in range(12):
    optimizer.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
```
""",
)
