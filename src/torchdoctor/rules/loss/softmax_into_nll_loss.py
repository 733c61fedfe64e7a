"""TD103 softmax-into-nll-loss."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD103",
    name="softmax-into-nll-loss",
    category=Category.LOSS,
    severity=Severity.ERROR,
    proof="lint",
    message="NLLLoss receives probabilities, not log-probabilities: its input comes from {source}",
    hint="Use log_softmax instead of softmax before NLLLoss, or drop the softmax and use CrossEntropyLoss on the logits.",
    sees={
        "lint": "softmax (not log_softmax) fed to `NLLLoss`",
        "run": "softmax into `NLLLoss`, read from the loss input's autograd node; reported at the softmax's line (or the model's `nn.Softmax` layer)",
    },
    doc="""
## What it does
Flags `nn.NLLLoss` / `F.nll_loss` whose input comes from a softmax (or an `nn.Softmax` last
layer) rather than a `log_softmax`.

## Why is this bad?
`NLLLoss` expects log-probabilities and simply takes minus the value at the target index.
With probabilities the "loss" is minus a probability: it is negative, bounded in [-1, 0],
and minimising it is not maximum likelihood. Training runs but optimises the wrong thing.

## Example
```python
import torch.nn.functional as F

def train_step(model, x, y, optimizer):
    loss = F.nll_loss(F.softmax(model(x), dim=1), y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
```

Use instead:
```python
import torch.nn.functional as F

def train_step(model, x, y, optimizer):
    loss = F.nll_loss(F.log_softmax(model(x), dim=1), y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
```

## References
- [`torch.nn.NLLLoss`](https://pytorch.org/docs/stable/generated/torch.nn.NLLLoss.html)
""",
)
