"""TD495 learning-rate-too-large."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD495",
    name="learning-rate-too-large",
    category=Category.OPTIMIZER,
    severity=Severity.WARNING,
    proof="run",
    message="the first {steps} steps of this {optimizer} moved the weights by {ratio} times their initial size each, on average (the median over {matrices} weight matrices; {lr}), and {loss}: a step as large as the weights themselves throws away what the previous steps learned",
    hint="Lower the learning rate until a step changes the weights by a small fraction of their size (about 1e-3 to 1e-2 per step is usual); for Adam-like optimizers each step moves every weight by about the learning rate, so it must be well below the weights' own scale.",
    sees={
        "run": "the first 3 steps of an optimizer from `torch.optim` move its weight matrices (2+ dimensions, 64+ elements, not starting at zero; a sample of up to 4,096 elements of up to 32 of them) by more than their initial size each, on average (the median over the matrices): measured against the weights before the first step, read once after the third step. The correct programs of the mutation bench step by at most 0.36 of it; the same programs with a learning rate 100x larger by 1.9x to 38x. Not judged: `step(closure)` optimizers (LBFGS), optimizers defined outside `torch.optim`, runs of fewer than 3 steps; reported at the optimizer's creation line",
    },
    doc="""
## What it does
Under `torchdoctor run`, measures how far each of the first 3 steps of an optimizer moves
the weight matrices it trains (parameters of two or more dimensions, of at least 64 elements,
that did not start at zero), relative to their size before the first step. It flags an
optimizer whose steps (the median over the matrices, averaged over the 3 steps) move the
weights by more than their own initial size while the loss shows the harm (the losses of the
next 3 steps are non-finite, or not below the first step's loss on average), and points at
the line that builds it. Large steps on a loss that falls (an easy full-batch problem that
Adam at 0.03 solves in a few steps) are not reported.

## Why is this bad?
A learning rate far too large shows no error and often no NaN: the loss jumps, then settles
at a high level or wanders, and the run looks like a model that cannot learn. The size of a
step relative to the weights tells it at once: healthy training changes a weight by a small
fraction of itself per step (around 1e-3), so that steps add up; Adam-like optimizers move
every weight by about the learning rate at each step, so a learning rate of 0.1 on weights of
scale 0.02 (a linear layer of a few hundred inputs, a transformer's usual initialisation)
replaces the weights at every step. Correct training, including SGD at a large learning rate
with gradient clipping, stays well below this: the measure is a ratio of the run's own
numbers, so it does not depend on the data, the model's size or the machine's load.

Optimizers whose steps are not gradient steps of a known size (LBFGS and other `step(closure)`
optimizers, optimizers defined outside `torch.optim`) are not judged; nor are weights that
start at zero (they have no size to compare with), nor runs that compute no loss after the 3
measured steps.

## Example
```python
import torch
from torch import nn

torch.manual_seed(0)
x = torch.randn(512, 256)
y = (x[:, 0] > 0).long()
model = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 2))
optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
for step in range(30):
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
```

Use instead:
```python
import torch
from torch import nn

torch.manual_seed(0)
x = torch.randn(512, 256)
y = (x[:, 0] > 0).long()
model = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 2))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(30):
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
```

## References
- [A recipe for training neural networks (A. Karpathy)](https://karpathy.github.io/2019/04/25/recipe/)
- [CS231n: the ratio of the update size to the parameter size, around 1e-3](https://cs231n.github.io/neural-networks-3/#ratio)
""",
)
