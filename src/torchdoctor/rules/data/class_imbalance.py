"""TD499 class-imbalance."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD499",
    name="class-imbalance",
    category=Category.DATA,
    severity=Severity.WARNING,
    proof="run",
    message="the classes this loss sees are skewed {ratio} to 1: over the first {samples} targets ({calls} batches), class {big} has {most} ({share_big}) and class {small} {least} ({share_small}), while the loss has no class weights and the batches are drawn plainly; a model that always predicts class {big} already scores {share_big} accuracy",
    hint="Weight the classes in the loss (`nn.CrossEntropyLoss(weight=...)`, e.g. inverse class frequencies), or draw balanced batches with `WeightedRandomSampler(weights, num_samples)`, and watch a metric that sees the rare class (per-class recall, F1, balanced accuracy) rather than accuracy.",
    doc="""
## What it does
Under `torchdoctor run`, counts the class targets of `F.cross_entropy` / `nn.CrossEntropyLoss`
and `F.nll_loss` / `nn.NLLLoss` computed with autograd on (one class per sample), over the first
batches: at least 500 samples and 20 per class (at most 200 batches). It flags targets whose most
frequent class has more than 10 times the samples of the least frequent one (SageMaker Debugger's
ClassImbalance default) and at least half of all samples (a majority class, whose prediction
alone scores that accuracy), while the loss has no `weight=` and every DataLoader samples plainly
(`shuffle=True` or `False`, no `WeightedRandomSampler` or custom batch sampler). It points at the
line that computes the loss. The counting stops after those batches: the rest of the run costs
nothing.

## Why is this bad?
With a 95/5 split, predicting the majority class for every sample already gives 95% accuracy and
a low loss: a plain loss spends almost all of its gradient on the majority class, and the rare
class, often the one that matters (the fraud, the disease), is learned late or never. Accuracy
hides it. Nothing fails.

## Example
```python
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
y = (torch.rand(1024) < 0.05).long()
x = torch.randn(1024, 8) + y[:, None]
loader = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=True)
model = nn.Linear(8, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for xb, yb in loader:
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(xb), yb)
    loss.backward()
    optimizer.step()
```

Use instead:
```python
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
y = (torch.rand(1024) < 0.05).long()
x = torch.randn(1024, 8) + y[:, None]
loader = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=True)
weight = len(y) / (2 * torch.bincount(y, minlength=2).float())
model = nn.Linear(8, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for xb, yb in loader:
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(xb), yb, weight=weight)
    loss.backward()
    optimizer.step()
```

## References
- [PyTorch: `WeightedRandomSampler`](https://pytorch.org/docs/stable/data.html#torch.utils.data.WeightedRandomSampler)
- [Amazon SageMaker Debugger built-in rules: ClassImbalance](https://docs.aws.amazon.com/sagemaker/latest/dg/debugger-built-in-rules.html)
""",
)
