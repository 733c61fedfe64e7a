"""TD498 validation-loss-below-training."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD498",
    name="validation-loss-below-training",
    category=Category.DATA,
    severity=Severity.INFO,
    proof="run",
    message="the validation loss computed here is far below the training loss: {val} against {train} (the mean of the last {window} training losses before it), {share} of it, at each of the last {count} evaluations",
    hint="Expected when dropout, augmentation or label smoothing apply only in training; otherwise check that the validation samples are not also in the training set (leakage) and that the two losses are computed and reduced the same way.",
    doc="""
## What it does
Under `torchdoctor run`, compares each evaluation's loss (losses computed with autograd off after
training began, with the training loss's function) with the mean of the last 20 training losses
before it, and notes, as info, a validation loss below half the training loss at each of the last
two evaluations. It points at the line that computes the validation loss.

## Why is this bad?
A model does not usually do better on data it never trained on. A validation loss far below the
training loss is expected when training is made harder on purpose (dropout, augmentation, label
smoothing apply only in training mode), but it is also what validation samples that leaked into
the training set, an easier validation split, or losses reduced differently (a sum against a
mean) look like. It is worth a look, not an error.

## Example
```python
import torch
from torch import nn

torch.manual_seed(0)
x, y = torch.randn(256, 16), torch.randint(0, 4, (256,))
x[:, :4] = nn.functional.one_hot(y, 4).float() * 3
model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Dropout(0.9), nn.Linear(64, 4))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
for epoch in range(4):
    model.train()
    for i in range(0, 256, 32):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x[i:i + 32]), y[i:i + 32])
        loss.backward()
        optimizer.step()
    model.eval()
    with torch.no_grad():
        val_loss = nn.functional.cross_entropy(model(x[:64]), y[:64])
```

Use instead:
```python
import torch
from torch import nn

torch.manual_seed(0)
x, y = torch.randn(256, 16), torch.randint(0, 4, (256,))
x[:, :4] = nn.functional.one_hot(y, 4).float() * 3
model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Dropout(0.1), nn.Linear(64, 4))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
for epoch in range(4):
    model.train()
    for i in range(0, 192, 32):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x[i:i + 32]), y[i:i + 32])
        loss.backward()
        optimizer.step()
    model.eval()
    with torch.no_grad():
        val_loss = nn.functional.cross_entropy(model(x[192:]), y[192:])
```

## References
- [Keras FAQ: why is my training loss much higher than my testing loss?](https://keras.io/getting_started/faq/#why-is-my-training-loss-much-higher-than-my-testing-loss)
""",
)
