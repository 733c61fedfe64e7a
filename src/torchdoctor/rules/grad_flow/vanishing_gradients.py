"""TD486 vanishing-gradients."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD486",
    name="vanishing-gradients",
    category=Category.GRAD_FLOW,
    severity=Severity.WARNING,
    proof="run",
    message="the gradients vanish before they reach the first layers: {count} weight(s) get gradients (root mean square per element) at least a million times below the largest of the model's weights ({largest}) at each of the first {steps} optimizer steps: {layers} (down to {ratio} times the largest); these layers barely learn",
    hint="A deep stack of sigmoid/tanh layers, or of layers initialised too small, shrinks the gradient at every layer: use ReLU-family activations with Kaiming initialisation (`nn.init.kaiming_normal_`), add normalisation layers (`nn.BatchNorm1d`, `nn.LayerNorm`) or residual connections, or make the network shallower.",
    doc="""
## What it does
Under `torchdoctor run`, reads the gradient norm of every weight (parameters with two dimensions
or more) at each of the first three optimizer steps, as root mean square per element, and flags
weights whose gradient is at least a million times below the largest of the model's weights at
each of those steps (six orders of magnitude: in correct networks, embeddings and heads included,
the spread stays within about three). It points at the line that builds the layer and lists the weights with their
gradient. Weights with no gradient at all, or an exactly zero one, are other rules' (TD413,
TD416); gradients that grow are TD490's.

## Why is this bad?
Backpropagation multiplies the gradient by each layer's Jacobian on its way down. A sigmoid
passes back at most a quarter, a tanh layer or a layer initialised too small less than one, and
through a dozen such layers the first ones get gradients millions of times smaller than the
last: they stay near their initial values while the loss falls only through the top layers.
Nothing fails; the network just learns like a much shallower one, or not at all.

SageMaker Debugger's VanishingGradient rule compares the mean absolute gradient with a fixed
1e-7, which depends on the model's scale; this rule compares each layer with the others of the
same model, from the first steps.

## Example
```python
import torch
from torch import nn

torch.manual_seed(0)
x = torch.randn(256, 16)
y = (x[:, 0] > 0).long()
layers = [nn.Linear(16, 64), nn.Sigmoid()]
for _ in range(11):
    layers += [nn.Linear(64, 64), nn.Sigmoid()]
model = nn.Sequential(*layers, nn.Linear(64, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(5):
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
x = torch.randn(256, 16)
y = (x[:, 0] > 0).long()
layers = [nn.Linear(16, 64), nn.LayerNorm(64), nn.ReLU()]
for _ in range(11):
    layers += [nn.Linear(64, 64), nn.LayerNorm(64), nn.ReLU()]
model = nn.Sequential(*layers, nn.Linear(64, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(5):
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
```

## References
- [Glorot and Bengio, "Understanding the difficulty of training deep feedforward neural networks" (2010)](https://proceedings.mlr.press/v9/glorot10a.html)
- [Amazon SageMaker Debugger built-in rules: VanishingGradient](https://docs.aws.amazon.com/sagemaker/latest/dg/debugger-built-in-rules.html)
""",
)
