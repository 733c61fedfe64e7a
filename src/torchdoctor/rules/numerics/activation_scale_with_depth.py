"""TD487 activation-scale-with-depth."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD487",
    name="activation-scale-with-depth",
    category=Category.NUMERICS,
    severity=Severity.WARNING,
    proof="run",
    message="at the first training forward, the variance of the layers' outputs {how} with depth by {ratio} over {layers} layers, from `{first}` to `{last}` ({profile}): the initialisation does not keep the signal's scale",
    hint="Initialise each layer at about 1/sqrt(inputs) for its activation (`nn.init.kaiming_normal_(w, nonlinearity='relu')`, `nn.init.xavier_uniform_` for tanh/sigmoid), or add normalisation layers; check any factor applied to the weights after they are built.",
    doc="""
## What it does
Under `torchdoctor run`, measures at the first training forward (before any update) the variance
of the output of each `nn.Linear` / `nn.Conv1d/2d/3d` layer (each unit's variance over the batch, averaged over the units), in the order they run, and flags a
model (at least four such layers) in which it grows by 10,000 times or more from the first layer
to a later one, layer after layer (at 80% of the layers on the way; a warning: an initialisation too large, or a scale applied
twice), or falls by 10,000 times or more (as info: PyTorch's default `nn.Linear` initialisation
itself shrinks a plain ReLU network's variance about sixfold a layer, so a deep plain network
with default initialisation collapses this way; with normalisation layers or Kaiming
initialisation it does not). It points at the line that builds the layers and lists the
variances. SageMaker Debugger's PoorWeightInitialization rule flags a spread above 10 between
layers; that fires on correct networks, hence the larger ratio here.

## Why is this bad?
Each layer multiplies the signal's variance by its fan-in times the weights' variance (times
the activation's gain). Initialised a little too large, the activations grow geometrically with
depth: the logits are enormous, the first losses and gradients explode, and sigmoids and softmaxes
saturate. Initialised too small, they shrink geometrically and the gradients with them. Both start
training in a place it may never leave, without an error.

## Example
```python
import torch
from torch import nn

torch.manual_seed(0)
x = torch.randn(256, 64)
y = (x[:, 0] > 0).long()
model = nn.Sequential(*[m for _ in range(8) for m in (nn.Linear(64, 64), nn.ReLU())], nn.Linear(64, 2))
for layer in model:
    if isinstance(layer, nn.Linear):
        nn.init.normal_(layer.weight, std=0.5)
optimizer = torch.optim.SGD(model.parameters(), lr=1e-6)
for step in range(3):
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
```

Use instead:
```python
import torch
from torch import nn

torch.manual_seed(0)
x = torch.randn(256, 64)
y = (x[:, 0] > 0).long()
model = nn.Sequential(*[m for _ in range(8) for m in (nn.Linear(64, 64), nn.ReLU())], nn.Linear(64, 2))
for layer in model:
    if isinstance(layer, nn.Linear):
        nn.init.kaiming_normal_(layer.weight, nonlinearity="relu")
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
for step in range(3):
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
```

## References
- [He et al., "Delving Deep into Rectifiers" (2015): Kaiming initialisation](https://arxiv.org/abs/1502.01852)
- [Amazon SageMaker Debugger built-in rules: PoorWeightInitialization](https://docs.aws.amazon.com/sagemaker/latest/dg/debugger-built-in-rules.html)
""",
)
