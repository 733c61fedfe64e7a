"""TD101 softmax-before-cross-entropy."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD101",
    name="softmax-before-cross-entropy",
    category=Category.LOSS,
    severity=Severity.ERROR,
    proof="lint",
    message="CrossEntropyLoss receives probabilities: its input comes from {source}",
    hint="Pass the raw logits to CrossEntropyLoss (it applies log_softmax itself); apply softmax only to report predictions.",
    sees={
        "lint": "softmax output (also an `nn.Softmax` last layer, a `forward` that returns softmax or a tuple with a softmax head, a method that returns one) fed to `CrossEntropyLoss`",
        "run": "softmax into `CrossEntropyLoss`, read from the loss input's autograd node; reported at the softmax's line (or the model's `nn.Softmax` layer)",
    },
    doc="""
## What it does
Flags a softmax (`torch.softmax`, `F.softmax`, `Tensor.softmax`, or an `nn.Softmax` as the
model's last layer) whose output is passed to `nn.CrossEntropyLoss` / `F.cross_entropy`,
also through the tuple a model's `forward()` returns (`validity, label = discriminator(x)`
where `label` always comes from a softmax head).

## Why is this bad?
`CrossEntropyLoss` applies `log_softmax` to its input itself. Fed probabilities, it computes
the log-softmax of values in [0, 1]: the loss can no longer approach 0 (with 10 classes and a
perfect prediction it stays at 1.46 instead of 0.0) and the gradients shrink, so training
plateaus early without any error. (`log_softmax` before the loss is harmless: same value.)

## Example
```python
import torch.nn.functional as F

def train_step(model, x, y, optimizer):
    probs = F.softmax(model(x), dim=1)
    loss = F.cross_entropy(probs, y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
```

Use instead:
```python
import torch.nn.functional as F

def train_step(model, x, y, optimizer):
    logits = model(x)
    loss = F.cross_entropy(logits, y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
```

## References
- [`torch.nn.CrossEntropyLoss`](https://pytorch.org/docs/stable/generated/torch.nn.CrossEntropyLoss.html): "The input is expected to contain the unnormalized logits for each class."
""",
)
