"""TD482 compiled-output-diverges."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD482",
    name="compiled-output-diverges",
    category=Category.COMPILE,
    severity=Severity.WARNING,
    proof="run",
    message="the compiled `{model}` computes a different output than its eager forward on the same input: {output} differs by up to {diff:.3g} ({relative:.2g} of its largest value; {dtype} rounding explains at most {tolerance:g})",
    hint="Compare the two yourself (`torch.compile(model, backend=\"aot_eager\")` isolates dynamo from the backend); look for Python state the forward reads or changes, ops with a custom kernel, and precision settings (TF32, `max-autotune`). Report a minimal case to PyTorch if it is the compiler.",
    sees={
        "run": "a compiled model whose output differs from its eager forward on the same input beyond what the dtype's rounding explains",
    },
    doc="""
## What it does
On one of the first calls of a `torch.compile`d model, replays its eager forward on the same
input (privately: forked RNG, copies of the buffers) and compares the outputs. A difference
beyond what the dtype's rounding and the reordering of a fused kernel explain (1e-3 of the
output's scale in float32, 5e-2 in float16/bfloat16) is reported, with the numbers. Models
with active dropout are not compared (their random draws differ between eager and compiled
code by design).

## Why is this bad?
"After torch.compile the accuracy dropped": a compiled model that computes something else
than the model you wrote trains something else, and nothing raises. The usual causes are
Python state read inside `forward` that compilation froze, side effects dynamo does not
replay, a custom op without a correct compiled form, or a backend bug.

## Example
```python
import torch
from torch import nn


def miscompiling_backend(graph_module, example_inputs):  # stands for a compiler bug
    def run(*args):
        return [out * 1.01 for out in graph_module(*args)]
    return run


model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
compiled = torch.compile(model, backend=miscompiling_backend)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(4):
    optimizer.zero_grad()
    compiled(torch.randn(16, 8)).pow(2).mean().backward()
    optimizer.step()
```

Use instead:
```python
import torch
from torch import nn

model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
compiled = torch.compile(model, backend="aot_eager")
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(4):
    optimizer.zero_grad()
    compiled(torch.randn(16, 8)).pow(2).mean().backward()
    optimizer.step()
```
""",
)
