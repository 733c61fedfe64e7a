"""TD494 training-loss-stalled."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD494",
    name="training-loss-stalled",
    category=Category.OPTIMIZER,
    severity=Severity.WARNING,
    proof="run",
    message="the training loss {trend} over {steps} optimizer steps of this {optimizer}: {first} on average over its first {window} computations, {last} over its last {window} ({chance}){why}",
    hint="Training that does not move from its first steps: check this optimizer's learning rate (far too large settles the loss at a high level without NaN, far too small barely moves the weights), the sign of the loss (minimised, not maximised), and that each input still comes with its own label.",
    sees={
        "run": "one optimizer has stepped at least 40 times and the classification loss of the training (`cross_entropy` / `nll_loss`, grad enabled, integer targets) never fell: the mean of its last 10 values is within 2% of (or above) the mean of its first 10, or below it by less than three standard errors of the batches' scatter, and at least half of `ln(C)`; a checkpoint (steps 100, 200, 400, ...) at which it had fallen by 3% and beyond the scatter clears the run. Not judged with two optimizers or other losses; reported only with a sign correct code does not give: the loss climbed (by 10%, to 1.5x chance), stays at 1.5x chance or more, or the weights moved by under 0.1% of their size since the first step; a flat loss at chance with moving weights (random labels give it) is not reported; reported at the optimizer's creation line",
    },
    doc="""
## What it does
Under `torchdoctor run`, follows the value of the classification loss the training computes
(`F.cross_entropy` / `nn.CrossEntropyLoss`, `F.nll_loss` / `nn.NLLLoss`, with grad enabled,
integer class targets) and flags a run of one optimizer in which it never falls: after at
least 40 optimizer steps, the mean over the last 10 computations is still within 2% of the
mean over the first 10 (or above it), or has fallen by less than the scatter of the batches'
losses explains (three standard errors of the difference of the two means), and is at least
half the chance-level loss `ln(C)` for `C` classes, and with it a sign that correct code does
not give: the loss climbed (by 10% of where it began, to 1.5 times the chance level), it stays
at 1.5 times the chance level or more (worse than guessing), or the weights barely moved (by
less than 0.1% of their size since the first step). It points at the line that builds the
optimizer. A loss flat at chance while the weights move is not reported: correct code on labels
that carry no information about the inputs (random synthetic data, the usual smoke test) draws
that curve, and so do inputs paired with other samples' labels, which this rule cannot tell
apart from it.

## Why is this bad?
A model that learns anything lowers its training loss within its first few dozen steps.
A loss that stays where it starts, or climbs, comes from a bug that raises no error: a
learning rate 100 times too large (the loss jumps and settles high, with no NaN), one
10,000 times too small (the weights barely move), a loss that is maximised (`-loss`),
or inputs paired with another sample's labels. Each shows only as a flat or rising
curve, often after hours.

The decision is made from the loss values and a copy of up to 4,096 elements of each parameter
taken after the first step (read once, when it is made: no per-step synchronisation) and counts steps, not seconds, so the machine's load does not
change it. Adversarial training (more than one optimizer) and losses other than these two
(regression, reinforcement learning, contrastive objectives), whose value need not fall,
are not judged. A checkpoint at which the loss had fallen by 3% or more (and beyond the
scatter) clears the run.

## Example
```python
import torch
from torch import nn

torch.manual_seed(0)
x = torch.randn(256, 8)
y = (x[:, 0] > 0).long()
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3 * 1e-4)
for step in range(60):
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
x = torch.randn(256, 8)
y = (x[:, 0] > 0).long()
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(60):
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
```

## References
- [A recipe for training neural networks (A. Karpathy): "verify loss @ init", "overfit one batch"](https://karpathy.github.io/2019/04/25/recipe/)
""",
)
