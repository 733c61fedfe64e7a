"""TD485 saturated-activations."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD485",
    name="saturated-activations",
    category=Category.GRAD_FLOW,
    severity=Severity.WARNING,
    proof="run",
    message="{share} of the inputs of `{layer}` ({kind}) in the training batch lie in its flat region (|x| > {bound}, where its derivative is below 1% of its peak), at each sampled step ({history}): the gradients through them are a hundred times smaller or less, and the layers before it barely learn; {cause}",
    hint="Initialise the layer before the activation at about 1/sqrt(inputs) (PyTorch's default, or `nn.init.xavier_uniform_` for sigmoid/tanh), normalise its inputs or add a normalisation layer before the activation, and lower the learning rate if the units saturated during training.",
    doc="""
## What it does
Under `torchdoctor run`, samples the training forwards at optimizer steps 1, 2, 3, 8, 16, 32,
... (up to 512) and, for each `nn.Sigmoid` / `nn.Tanh` layer, measures the share of its inputs
(every element of the batch) that lie in the activation's flat region: |x| > 6 for the sigmoid,
|x| > 3 for tanh, where the derivative is below 1% of its peak. A layer is reported when more
than 50% of its inputs are there at three sampled steps in a row (the layer share of SageMaker
Debugger's SaturatedActivation rule, whose bounds are wider: where float32 rounds the output to
exactly 0 or 1), at the line that builds the layer, with the standard deviation of the weights
before it when the inputs were saturated from the first step. Correct networks, initialised at
about 1/sqrt(inputs), keep their pre-activations within about 3.

## Why is this bad?
A sigmoid or tanh unit far from zero outputs its limit whatever its input and passes back
almost no gradient. Weights initialised too large (a standard deviation of 1 where 1/sqrt(inputs)
is needed), inputs that are not normalised, or a learning rate that blows the pre-activations up
put most units there: training crawls or stops, without an error or a NaN.

## Example
```python
import torch
from torch import nn

torch.manual_seed(0)
x = torch.randn(512, 256)
y = (x[:, 0] > 0).long()
model = nn.Sequential(nn.Linear(256, 128), nn.Sigmoid(), nn.Linear(128, 2))
nn.init.normal_(model[0].weight, std=1.0)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(10):
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(x[:64]), y[:64])
    loss.backward()
    optimizer.step()
```

Use instead:
```python
import torch
from torch import nn

torch.manual_seed(0)
x = torch.randn(512, 256)
y = (x[:, 0] > 0).long()
model = nn.Sequential(nn.Linear(256, 128), nn.Sigmoid(), nn.Linear(128, 2))
nn.init.normal_(model[0].weight, std=1.0 / 256 ** 0.5)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(10):
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(x[:64]), y[:64])
    loss.backward()
    optimizer.step()
```

## References
- [Glorot and Bengio, "Understanding the difficulty of training deep feedforward neural networks" (2010)](https://proceedings.mlr.press/v9/glorot10a.html)
- [Amazon SageMaker Debugger built-in rules: SaturatedActivation](https://docs.aws.amazon.com/sagemaker/latest/dg/debugger-built-in-rules.html)
""",
)
