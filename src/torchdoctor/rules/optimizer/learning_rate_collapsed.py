"""TD428 learning-rate-collapsed."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD428",
    name="learning-rate-collapsed",
    category=Category.OPTIMIZER,
    severity=Severity.WARNING,
    proof="run",
    message="the learning rate fell below 1e-6 of its peak ({peak}) at optimizer step {start} and stayed there for {low} of {steps} steps: {call} ({scheduler}) ran {count} times, {cadence}",
    hint="Step an epoch-based scheduler once per epoch, after the batch loop; to step it every batch, size its schedule in optimizer steps (e.g. `step_size=30 * len(loader)`, `total_iters=epochs * len(loader)`).",
    sees={
        "run": "the learning rate of every parameter group stays below 1e-6 of its peak from some step to the end, for at least half of the optimizer's steps (and 20), while one of its `LRScheduler`s steps at least once per two optimizer steps (an epoch-based schedule stepped every batch); reported at the `scheduler.step()` call",
    },
    doc="""
## What it does
Flags a learning-rate scheduler stepped far more often than its schedule assumes, from its
effect: the learning rate fell below one millionth of its peak and stayed there for most of
the run. It points at the `scheduler.step()` call.

At `torchdoctor run` time the learning rate of every parameter group is read before each
optimizer step. The finding needs every group with a positive peak below 1e-6 of its peak
from some step to the end, for at least half of the optimizer's steps (and at least 20), and
an `LRScheduler` of that optimizer stepped at least once per two optimizer steps. The usual
cause is an epoch-based schedule (`StepLR`, `ExponentialLR`, `LinearLR` or `PolynomialLR`
with `total_iters` in epochs, a linear warm-up-and-decay sized for one epoch of several)
whose `scheduler.step()` sits inside the batch loop.

Legitimate schedules stay far from the condition (measured on torch 2.13, learning rate /
peak): StepLR and MultiStepLR per epoch (0.1 every 30 of 90 epochs) never go below 1e-3;
CosineAnnealingLR to `eta_min=0` and PolynomialLR sized to the run go below 1e-6 only for
their last few steps (under 0.1% of the run); OneCycleLR stays above 4e-6 (its defaults),
CosineAnnealingWarmRestarts touches its bottom for a step or two per cycle and climbs back,
LinearLR decaying to 0 stays above 2e-4 until its last step; a warm-up from 0 is never low (its peak comes later), nor is a constant or zero
learning rate (a frozen group). A scheduler stepped once per epoch is left alone even when it
does decay that far (ReduceLROnPlateau on a stalled metric): that is the schedule's design.
So is one parameter group sent to 0 while another trains. Schedules stepped too often that do
not fall that low are not reported: MultiStepLR with three milestones of 0.1 ends at 1e-3,
and CosineAnnealingLR climbs back up after `T_max` steps.

## Why is this bad?
An epoch-based schedule stepped after every batch moves through its epochs hundreds of times
too fast: `StepLR(step_size=30, gamma=0.1)` over 50 batches x 90 epochs divides the learning
rate by 10 every 30 batches, 150 times in all. After a few hundred steps updates are too
small to change anything, and the rest of the run computes gradients for nothing. Nothing
fails: the loss just stops improving, which looks like a model that has converged.

## Example
```python
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(8, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=3, gamma=0.1)
batches = [(torch.randn(16, 8), torch.randint(0, 2, (16,))) for _ in range(20)]
for epoch in range(10):
    for x, y in batches:
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
        scheduler.step()
```

Use instead:
```python
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(8, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=3, gamma=0.1)
batches = [(torch.randn(16, 8), torch.randint(0, 2, (16,))) for _ in range(20)]
for epoch in range(10):
    for x, y in batches:
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
    scheduler.step()
```

## References
- [How to adjust the learning rate](https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate)
""",
)
