"""TD115 accumulation-reset-every-micro-batch."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD115",
    name="accumulation-reset-every-micro-batch",
    category=Category.OPTIMIZER,
    severity=Severity.ERROR,
    proof="lint",
    message="gradients are reset before every backward() but the optimizer steps only {every}: each step uses the last micro-batch's gradients, and the other backward passes are thrown away",
    hint="Reset the gradients after the step, not before every backward: `if (i + 1) % accum_steps == 0: optimizer.step(); optimizer.zero_grad()`.",
    sees={
        "lint": "gradient accumulation undone: an unconditional `zero_grad()` before an unconditional `backward()`, with the step under `if i % k ...:` (a reset under its own periodic `if`, or a gated step with its own backward, is fine)",
        "run": "gradient accumulation undone: a `zero_grad()` before every `backward()` while the optimizer steps every k backward passes (the same backward line, the same count before each of the first steps), at the `zero_grad` line",
    },
    doc="""
## What it does
Flags gradient accumulation that a `zero_grad()` undoes: the optimizer steps only every few
iterations, but the gradients are reset before every `backward()`. Lint reads it from the
loop: an unconditional `zero_grad()` before an unconditional `backward()`, and the step under
an `if` that tests a counter with `%` (`if (i + 1) % accum_steps == 0:`); a reset under its
own periodic `if` is the correct form and is not flagged. `torchdoctor run` sees it happen:
in each of the first optimizer steps the same `backward()` line ran several times with a
reset covering the optimizer's parameters between them, the same number of times before every
step. Both point at the `zero_grad()`. A backward pass on another line thrown away on purpose
(the input gradient of an adversarial example) and steps skipped now and then (a non-finite
loss, `GradScaler` finding its scale) are not flagged.

## Why is this bad?
Accumulating gradients over micro-batches only works if they are summed into `.grad` until
the step. Resetting them before every backward keeps only the last micro-batch: the effective
batch is `accum_steps` times smaller than intended, the learning rate is scaled for a batch that
never happens (and the loss is divided by `accum_steps` for nothing), and all but one backward
pass per step is wasted compute.

## Example
```python
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(8, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
accum_steps = 4
for i in range(16):
    x, y = torch.randn(8, 8), torch.randn(8, 1)
    optimizer.zero_grad()
    loss = nn.functional.mse_loss(model(x), y) / accum_steps
    loss.backward()
    if (i + 1) % accum_steps == 0:
        optimizer.step()
```

Use instead:
```python
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(8, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
accum_steps = 4
for i in range(16):
    x, y = torch.randn(8, 8), torch.randn(8, 1)
    loss = nn.functional.mse_loss(model(x), y) / accum_steps
    loss.backward()
    if (i + 1) % accum_steps == 0:
        optimizer.step()
        optimizer.zero_grad()
```
""",
)
