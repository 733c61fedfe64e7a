"""TD484 dead-units."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD484",
    name="dead-units",
    category=Category.GRAD_FLOW,
    severity=Severity.WARNING,
    proof="run",
    message="{share} of the units of `{layer}` ({kind}) output zero for every sample of the training batch, at each sampled step ({history}): no gradient flows back through a dead unit, so it never learns again; {cause}",
    hint="Lower the learning rate (or warm it up), keep PyTorch's default or Kaiming initialisation, normalise the inputs or add a normalisation layer before the activation, or use `nn.LeakyReLU` / `nn.GELU`, which always pass some gradient.",
    doc="""
## What it does
Under `torchdoctor run`, samples the training forwards at optimizer steps 1, 2, 3, 8, 16, 32, 64,
... (up to 512) and, for each `nn.ReLU` / `nn.ReLU6` layer, counts the units (a Linear's
features, a convolution's channels) whose output is zero for every sample of the batch and every
position. A layer is reported when more than 90% of its units are dead at three sampled steps in
a row, at the line that builds the layer,
with the share at each sampled step and the likely cause: units dead from the first step point to
the initialisation or to inputs that are not normalised; units that were alive at the first step
and died during training point to a learning rate that is too large (and to the biases before
them, pushed negative). Between 50% (SageMaker Debugger's DeadRelu default) and 90% the finding is
info: correct small networks keep learning with 60 to 85% of a layer's units dead.

## Why is this bad?
A ReLU unit whose input is negative for every sample outputs zero and passes back a zero
gradient: nothing moves its weights again, and it is lost for the rest of the run. One large
update, from a learning rate too large or a gradient spike, can push most of a layer there at
once. Training goes on without an error, at a fraction of the network's capacity, and the loss
settles high.

Activations are sampled only at those steps, through a forward hook that is removed after the
sampled forward: the other steps cost nothing.

## Example
```python
import torch
from torch import nn

torch.manual_seed(0)
x = torch.randn(512, 16)
y = (x[:, 0] > 0).long() + 2 * (x[:, 1] > 0).long()
model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 4))
optimizer = torch.optim.SGD(model.parameters(), lr=3.0, momentum=0.9)
for step in range(40):
    batch = torch.arange(step * 32, step * 32 + 32) % 512
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(x[batch]), y[batch])
    loss.backward()
    optimizer.step()
```

Use instead:
```python
import torch
from torch import nn

torch.manual_seed(0)
x = torch.randn(512, 16)
y = (x[:, 0] > 0).long() + 2 * (x[:, 1] > 0).long()
model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 4))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
for step in range(40):
    batch = torch.arange(step * 32, step * 32 + 32) % 512
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(x[batch]), y[batch])
    loss.backward()
    optimizer.step()
```

## References
- [CS231n: "dying ReLU" units and the learning rate](https://cs231n.github.io/neural-networks-1/#actfun)
- [Amazon SageMaker Debugger built-in rules: DeadRelu](https://docs.aws.amazon.com/sagemaker/latest/dg/debugger-built-in-rules.html)
""",
)
