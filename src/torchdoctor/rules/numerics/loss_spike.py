"""TD496 loss-spike."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD496",
    name="loss-spike",
    category=Category.NUMERICS,
    severity=Severity.WARNING,
    proof="run",
    message="the loss jumped to {loss:.4g} at step {step}, {sigmas} robust deviations above its median of "
            "{median:.4g} over the last {window} losses; {after}. The batch: {batch}{saved}",
    hint="Look at those samples first (a corrupted input, a mislabelled or out-of-scale target); then make one batch "
         "unable to undo the training: clip the gradients (`torch.nn.utils.clip_grad_norm_`), lower the learning "
         "rate or warm it up. `torchdoctor run --save-bad-batches DIR` writes the batch and the weights that "
         "produced it, to reproduce the step.",
    doc="""
## What it does
Follows the loss handed to `backward()` (CPU losses: one read per step) and compares each one
with the distribution of the last losses: their median and their median absolute deviation
(MAD), robust to the usual scatter of small batches. A loss more than 10 robust deviations
(`1.4826 * MAD`) above that median, and at least twice as far above it as the median's own
size, is a spike. It names the step, the sample indices of the batch as the DataLoader's sampler
produced them (and the dataset's own ids when its batches carry them under `id`, `ids`, `idx`,
`index` or `sample_id`), and the samples whose values stand out of the batch by orders of
magnitude. What follows decides the severity: a spike that leads to a non-finite loss, or
after which the loss stays at the spike's level, is a warning; a spike the training recovers
from within the next 10 losses is info.

With `torchdoctor run --save-bad-batches DIR` the batch is written to
`DIR/spike-step<N>-pid<P>.pt` (`torch.load(..., weights_only=False)`): the batch as the loop
received it, its indices and ids, the loss, and the weights of every model at that moment
(`models`: name -> `state_dict`), so that feeding the batch to the model loaded with those
weights computes the spike again. At most 4 files per process, each at most 256 MiB (the
weights are left out of a file they would make larger).

## Why is this bad?
One bad sample (a corrupted image, a target a thousand times too large, a unit mix-up) is
enough for one huge gradient, and one huge gradient can throw away hours of training or send
the weights to NaN. The loss curve shows the spike, but not which samples caused it; with
shuffled data the same batch never comes again.

## Example
```python
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
x = torch.randn(512, 8)
y = x.sum(dim=1, keepdim=True)
y[300] = 5000.0  # one corrupted target
loader = DataLoader(TensorDataset(x, y), batch_size=16, shuffle=True)
model = nn.Linear(8, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
for epoch in range(3):
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(xb), yb)
        loss.backward()
        optimizer.step()
```

Use instead:
```python
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
x = torch.randn(512, 8)
y = x.sum(dim=1, keepdim=True)
y[300] = x[300].sum()  # the target repaired
loader = DataLoader(TensorDataset(x, y), batch_size=16, shuffle=True)
model = nn.Linear(8, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
for epoch in range(3):
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(xb), yb)
        loss.backward()
        optimizer.step()
```

## References
- Amazon SageMaker Debugger's rules compare tensors with fixed thresholds; the median and MAD
  here follow the robust outlier test of Iglewicz and Hoaglin (modified z-score).
""",
)
