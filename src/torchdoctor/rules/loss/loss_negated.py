"""TD176 loss-negated."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD176",
    name="loss-negated",
    category=Category.LOSS,
    severity=Severity.WARNING,
    proof="lint",
    message="`{expression}` flips the sign of {losses}, and the result is backpropagated (line {line}) and stepped: the optimizer maximises the loss",
    hint="Drop the minus sign: a loss is minimised as it is (`loss = criterion(output, target)`); negate only what should grow, such as a log-likelihood or a reward.",
    sees={
        "lint": "`loss = -criterion(out, y)`, `(-loss).backward()`, `loss = -(bce + kld)`: every loss-function term of the backpropagated value has its sign flipped, and the iteration steps an optimizer over parameters (a double negation, `ce - 0.1 * entropy`, hand-written policy-gradient/WGAN losses, a flip under an `if`, ascent on an input perturbation and the minimax GAN `-BCE(D(G(z)), zeros)` are left alone)",
    },
    doc="""
## What it does
Flags a training step whose backpropagated value is a loss with its sign flipped:
`loss = -criterion(output, target)`, `(-loss).backward()`, `loss = -(bce + kld)`, or a value
returned negated by a loss function of the same file, when every loss-function term of it
ends with a minus sign and the same iteration steps an optimizer over parameters.

The losses it knows are the torch losses that are never negative on their valid inputs
(`cross_entropy`, `nll_loss` of log-probabilities, `binary_cross_entropy(_with_logits)`,
`mse_loss`, `l1_loss`, `kl_div` of distributions, the margin losses... and their `nn.*Loss`
classes); `poisson_nll_loss`, `gaussian_nll_loss` and `hinge_embedding_loss` can be negative
and are left out. A loss beside a negated term (`ce - 0.1 * entropy`), a double negation
(`elbo = -bce - kl; loss = -elbo`), a sign flipped under an `if`, losses written by hand
(`-log_prob * reward`, `-D(x).mean()`), ascent on an input perturbation (no optimizer over
parameters in that loop), and the minimax GAN objective `-BCE(D(G(z)), zeros)` are left alone.

## Why is this bad?
The optimizer minimises what `backward()` is called on. Negated, a non-negative loss is
minimised by making the loss itself as large as possible: the model learns to be wrong, the
printed loss grows without bound (or sits at a large negative value if the negation is
printed too), and nothing crashes.

## Example
```python
import torch
import torch.nn.functional as F
from torch import nn

model = nn.Linear(4, 3)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(10):
    x, y = torch.randn(8, 4), torch.randint(0, 3, (8,))
    loss = -F.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
```

Use instead:
```python
import torch
import torch.nn.functional as F
from torch import nn

model = nn.Linear(4, 3)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(10):
    x, y = torch.randn(8, 4), torch.randint(0, 3, (8,))
    loss = F.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
```
""",
)
