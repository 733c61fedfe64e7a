"""TD132 frozen-batchnorm-drift."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD132",
    name="frozen-batchnorm-drift",
    category=Category.MODE,
    severity=Severity.WARNING,
    proof="check",
    message="batch-norm {name} has frozen weights but is in train mode: its running statistics still change every batch",
    hint="Put frozen batch-norm layers in eval mode after every `model.train()` (override `train()` or call `module.eval()` on them), or use `FrozenBatchNorm2d`.",
    sees={
        "run": "batch-norm layers whose weights are all frozen update their running statistics, in a model being trained or in a frozen model no optimizer updates (a feature extractor, a teacher) run in train mode; a model frozen only during another optimizer's step (a GAN discriminator) is not; reported at the `model.train()` that put them back in train mode",
    },
    doc="""
## What it does
Flags batch-norm layers whose affine parameters are all frozen (`requires_grad=False`) while
the layer is in training mode, so that its running mean and variance keep changing.

## Why is this bad?
`requires_grad=False` stops gradients, not the statistics update: a batch-norm layer in
`train()` mode overwrites `running_mean`/`running_var` with every batch (one batch moves a
zero mean to about 0.9 with momentum 0.1 on shifted data). A "frozen" pretrained backbone
drifts away from its pretrained statistics, and a later `model.train()` undoes any per-layer
`eval()` you did once.

## Example
```python
import torch
from torch import nn

def make():
    backbone = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU())
    backbone.requires_grad_(False)
    model = nn.Sequential(backbone, nn.Linear(16, 3))
    x, y = torch.randn(32, 8) * 3 + 1, torch.arange(32) % 3
    return {"model": model, "data": (x, y), "loss_fn": nn.CrossEntropyLoss()}
```

Use instead:
```python
import torch
from torch import nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU())
        self.backbone.requires_grad_(False)
        self.head = nn.Linear(16, 3)

    def train(self, mode=True):
        super().train(mode)
        self.backbone.eval()  # frozen: keep its statistics
        return self

    def forward(self, x):
        return self.head(self.backbone(x))

def make():
    x, y = torch.randn(32, 8) * 3 + 1, torch.arange(32) % 3
    return {"model": Model(), "data": (x, y), "loss_fn": nn.CrossEntropyLoss()}
```
""",
)
