"""TD430 loss-arguments-swapped."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD430",
    name="loss-arguments-swapped",
    category=Category.LOSS,
    severity=Severity.ERROR,
    unsafe_fix=True,
    proof="run",
    message="{loss} got the labels as its input and the model's output as its target: input is {input}, target is {target}",
    hint="Swap the arguments: losses take `(input, target)`, the model's output first, e.g. `criterion(model(x), y)`.",
    sees={
        "lint": "`F.nll_loss(target, output)`, `criterion(labels, model(x))`: a class-index loss given the labels first and a model's output second (labels: drawn from a DataLoader or named `target`/`labels`/`y`...; two model outputs, or an argument of unknown origin, are left alone)",
    },
    doc="""
## What it does
Explains the crash `"log_softmax_lastdim_kernel_impl" not implemented for 'Long'` (and its
variants) raised by `CrossEntropyLoss` / `F.cross_entropy`, and `0D or 1D target tensor
expected, multi-target not supported` raised by `NLLLoss` / `F.nll_loss`, when the loss's
input is an integer tensor and its target a floating-point one (of more dimensions, for
NLLLoss): the two arguments are in the wrong order. `lint` reports the same mistake from the
source: a class-index loss whose second argument is a model's output and whose first is the
labels (drawn from a DataLoader, or named `target`, `labels`, `y`...).

## Why is this bad?
Every PyTorch loss takes the prediction first and the target second. Written the other way
round, `CrossEntropyLoss` tries a log-softmax over the integer labels and fails with an error
about a kernel and a dtype, and `NLLLoss` complains about "multi-target", which sends people
to cast their labels to float or to reshape them: the error then changes, and the arguments
stay swapped. Verified on torch 2.13.

## Example
```python
import torch
from torch import nn

logits = torch.randn(8, 3, requires_grad=True)
labels = torch.randint(0, 3, (8,))
loss = nn.CrossEntropyLoss()(labels, logits)
```

Use instead:
```python
import torch
from torch import nn

logits = torch.randn(8, 3, requires_grad=True)
labels = torch.randint(0, 3, (8,))
loss = nn.CrossEntropyLoss()(logits, labels)
```
""",
)
