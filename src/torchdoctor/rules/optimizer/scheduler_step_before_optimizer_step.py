"""TD156 scheduler-step-before-optimizer-step."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD156",
    name="scheduler-step-before-optimizer-step",
    category=Category.OPTIMIZER,
    severity=Severity.WARNING,
    proof="lint",
    message="`{scheduler}.step()` runs before the first `optimizer.step()`: the schedule skips its first value",
    hint="Call `{scheduler}.step()` after `optimizer.step()` (at the end of the epoch for epoch-based schedulers).",
    sees={
        "lint": "the LR scheduler stepped before the optimizer (a scheduler of unknown type: only once per epoch, before the batches)",
    },
    doc="""
## What it does
Flags a learning-rate scheduler stepped before the optimizer in the same pass of a training
loop (for example at the start of every epoch, before the batches). A scheduler whose type
the file does not show (a parameter, a library's or the project's own class) is flagged only
when it is stepped once per epoch before the batches: hand-written warm-up schedulers are
often meant to set the rate of the step about to be taken, right before `optimizer.step()`.

## Why is this bad?
Since PyTorch 1.1 the scheduler must be stepped *after* the optimizer. Stepped first, it moves
the learning rate on before any update used it: the first value of the schedule (often the
warm-up start, or the base learning rate of the first epoch) is never used, and every later
value comes one step early. PyTorch warns "Detected call of `lr_scheduler.step()` before
`optimizer.step()`" once, in a log nobody reads.

## Example
```python
def fit(model, loader, loss_fn, optimizer, scheduler, epochs):
    for epoch in range(epochs):
        scheduler.step()
        for x, y in loader:
            optimizer.zero_grad()
            loss_fn(model(x), y).backward()
            optimizer.step()
```

Use instead:
```python
def fit(model, loader, loss_fn, optimizer, scheduler, epochs):
    for epoch in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            loss_fn(model(x), y).backward()
            optimizer.step()
        scheduler.step()
```

## References
- [How to adjust the learning rate](https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate)
""",
)
