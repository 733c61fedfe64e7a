"""TD488 validation-loss-rising."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD488",
    name="validation-loss-rising",
    category=Category.OPTIMIZER,
    severity=Severity.WARNING,
    proof="run",
    message="the model overfits from {when} (after optimizer step {step}): the validation loss computed here rose over the {count} evaluations since its best, {best} ({history}), while the training loss before them fell ({trains})",
    hint="Keep the weights of the best evaluation (early stopping: save a checkpoint when the validation loss improves), and regularise: more training data or augmentation, weight decay, dropout, or a smaller model.",
    doc="""
## What it does
Under `torchdoctor run`, follows the losses the script computes with autograd off after training
began (a no-grad forward on other batches between training epochs: an evaluation), with the same
loss function as training. Each evaluation's mean is compared with the mean of the last 20
training losses before it. The rule flags a run in which the validation loss rose at each of the
last three evaluations, is 10% above its best value (at least three evaluations earlier) and 10%
above the training loss, while the training loss fell by 10% since the best evaluation. It points at the line that computes the
validation loss and names the epoch (the training loader's iteration) of the best evaluation,
where overfitting began.

SageMaker Debugger's Overfit rule reports a validation loss 10% above the training loss at a
single evaluation; one noisy evaluation does that on correct runs, hence the three rises here.

## Why is this bad?
A validation loss that climbs while the training loss keeps falling means the model memorises
its training samples instead of learning what generalises: every epoch after the best one makes
the model worse on new data, and the weights saved at the end are not the best ones. On a small
dataset this starts within a few epochs.

## Example
```python
import torch
from torch import nn

torch.manual_seed(0)
x, y = torch.randn(32, 64), torch.randint(0, 4, (32,))
x_val, y_val = torch.randn(256, 64), torch.randint(0, 4, (256,))
model = nn.Sequential(nn.Linear(64, 512), nn.ReLU(), nn.Linear(512, 4))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for epoch in range(30):
    for i in range(0, 32, 8):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x[i:i + 8]), y[i:i + 8])
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        val_loss = nn.functional.cross_entropy(model(x_val), y_val)
```

Use instead:
```python
import torch
from torch import nn

torch.manual_seed(0)
x, y = torch.randn(32, 64), torch.randint(0, 4, (32,))
x_val, y_val = torch.randn(256, 64), torch.randint(0, 4, (256,))
model = nn.Sequential(nn.Linear(64, 512), nn.ReLU(), nn.Linear(512, 4))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
best, waited = float("inf"), 0
for epoch in range(30):
    for i in range(0, 32, 8):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x[i:i + 8]), y[i:i + 8])
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        val_loss = nn.functional.cross_entropy(model(x_val), y_val)
    if val_loss < best:
        best, waited = val_loss, 0
    else:
        waited += 1
        if waited == 2:
            break
```

## References
- [Prechelt, "Early Stopping — But When?" (1998)](https://link.springer.com/chapter/10.1007/3-540-49430-8_3)
- [Amazon SageMaker Debugger built-in rules: Overfit](https://docs.aws.amazon.com/sagemaker/latest/dg/debugger-built-in-rules.html)
""",
)
