"""TD107 softmax-over-batch-dim."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD107",
    name="softmax-over-batch-dim",
    category=Category.LOSS,
    severity=Severity.ERROR,
    proof="run",
    message="softmax normalises over dim {dim}, the batch dimension (size {size}), not over the classes",
    hint="Normalise over the class dimension: `softmax(x, dim=1)` (or `dim=-1`).",
    variants={
        # softmax over dim 0 of a batch of one (run); `{where}` names the backward() line when it differs
        "batch-of-one": Variant(message="{kind} normalises over dim 0 of a {shape} tensor, a batch of one, not over the {classes} classes: every probability is 1, whatever the scores, so no gradient reaches the layers before it{where}", hint="Normalise over the class dimension: `softmax(x, dim=-1)`."),
        # the same for log_softmax
        "log-batch-of-one": Variant(message="{kind} normalises over dim 0 of a {shape} tensor, a batch of one, not over the {classes} classes: every log-probability is 0, whatever the scores, so no gradient reaches the layers before it{where}", hint="Normalise over the class dimension: `softmax(x, dim=-1)`."),
    },
    sees={
        "run": "softmax / log-softmax over the batch dimension feeding a classification loss, or over a batch of one (a constant)",
    },
    doc="""
## What it does
Flags a softmax or log-softmax over the batch dimension (dim 0 of a batched tensor, also the
implicit dim an old call without `dim=` picks for 2-D input) whose output reaches a loss;
and, where no loss function sees the probabilities (a policy sampling one action per state),
a softmax over dim 0 of a batch of one, `(1, classes)`, in the graph backward() runs through
(seen at two backward() calls).

## Why is this bad?
The probabilities then sum to 1 over the samples of the batch instead of over the classes:
each sample's prediction depends on the other samples in the batch, and accuracy is
meaningless. Nothing raises; the loss just trains something else. Over a batch of one every
probability is exactly 1 (every log-probability 0) whatever the scores: the actions are drawn
uniformly at random, and no gradient reaches the layers before the softmax.

## Example
```python
import torch
from torch import nn
import torch.nn.functional as F

torch.manual_seed(0)
model = nn.Linear(8, 4)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(32, 8), torch.randint(0, 4, (32,))
for step in range(3):
    loss = F.nll_loss(F.log_softmax(model(x), dim=0), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
```

Use instead:
```python
import torch
from torch import nn
import torch.nn.functional as F

torch.manual_seed(0)
model = nn.Linear(8, 4)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(32, 8), torch.randint(0, 4, (32,))
for step in range(3):
    loss = F.nll_loss(F.log_softmax(model(x), dim=1), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
```
""",
)
