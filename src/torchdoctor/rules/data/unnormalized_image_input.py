"""TD450 unnormalized-image-input."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD450",
    name="unnormalized-image-input",
    category=Category.DATA,
    severity=Severity.WARNING,
    proof="run",
    message="the first layer `{layer}` receives raw pixel values (whole numbers from {low} to {high} in a float tensor): the images were never scaled to [0, 1] or standardised",
    hint="Scale once in the data pipeline: `images.float() / 255` (then normalise with the dataset's mean and std, e.g. `transforms.Normalize`), or use `transforms.ToTensor()`, which does both conversions.",
    sees={
        "run": "the first layer (a convolution, or a linear layer over image-sized vectors) gets whole numbers from 0 to 255 in a float tensor; reported at the model call",
    },
    doc="""
## What it does
At run time, looks at the input of the model's first layer with weights (a convolution, or
a linear layer over image-sized vectors) during the first training steps. It flags a
floating-point batch whose values are all whole numbers between 0 and 255, with a maximum of
at least 128: images converted with `.float()` but never divided by 255 or standardised.

## Why is this bad?
Weight initialisation assumes inputs of roughly unit scale. Values up to 255 make the first
activations and logits hundreds of times too large: the first loss is far above that of a
random guess, the softmax saturates and training is slow and unstable, or diverges unless the
learning rate is cut, with no error anywhere. Masks (0/1), class maps (small integers),
integer-coded tabular features and word counts are not flagged, and neither are models that
normalise their input before their first layer.

## Example
```python
import torch
from torch import nn

images = torch.randint(0, 256, (64, 1, 16, 16), generator=torch.Generator().manual_seed(0))
labels = torch.arange(64) % 10
x = images.float()  # still 0..255
model = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 16 * 16, 10))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(3):
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(x), labels)
    loss.backward()
    optimizer.step()
```

Use instead:
```python
import torch
from torch import nn

images = torch.randint(0, 256, (64, 1, 16, 16), generator=torch.Generator().manual_seed(0))
labels = torch.arange(64) % 10
x = images.float() / 255  # scaled to [0, 1]
model = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 16 * 16, 10))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(3):
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(x), labels)
    loss.backward()
    optimizer.step()
```
""",
)
