"""TD480 compile-graph-break."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD480",
    name="compile-graph-break",
    category=Category.COMPILE,
    severity=Severity.WARNING,
    proof="run",
    message="torch.compile breaks the graph on this line: {what}; the code after it is compiled as a separate graph (or runs eagerly), and every call pays the switch",
    hint="{rewrite}",
    sees={
        "run": "each graph break at the line that caused it, the reason in plain words and the rewrite (`.item()`, a Python `if` on a tensor, `print`, an untraceable call)",
    },
    doc="""
## What it does
Reports each place where `torch.compile` (dynamo) stopped tracing a compiled function or
model, at the line of your code that caused it, with the reason in plain words and the
rewrite that removes it: a Python `if` on a tensor's value, `.item()`, `print`, a call
into a library dynamo does not trace. Read from dynamo's own record of its graph breaks
at the end of the run; nothing is traced twice.

## Why is this bad?
Each break splits the compiled code into separate graphs: the fusions across the break are
lost, the Python code between the graphs runs every step, and a data-dependent branch
compiles one graph per outcome. The speed-up you compiled for shrinks or disappears, and no
error says so.

## Example
```python
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        h = self.fc(x)
        if h.mean() > 0:  # a Python branch on a tensor's value
            h = h * 0.5
        return h


model = torch.compile(Net())
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(4):
    optimizer.zero_grad()
    model(torch.randn(16, 8)).pow(2).mean().backward()
    optimizer.step()
```

Use instead:
```python
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        h = self.fc(x)
        return torch.where(h.mean() > 0, h * 0.5, h)  # the branch as a tensor op


model = torch.compile(Net())
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(4):
    optimizer.zero_grad()
    model(torch.randn(16, 8)).pow(2).mean().backward()
    optimizer.step()
```
""",
)
