"""TD430 loss-arguments-swapped."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD430",
    name="loss-arguments-swapped",
    category=Category.LOSS,
    severity=Severity.ERROR,
    proof="run",
    message="{loss} got the labels as its input and the model's output as its target: input is {input}, target is {target}",
    hint="Swap the arguments: losses take `(input, target)`, the model's output first, e.g. `criterion(model(x), y)`.",
    doc="""
## What it does
Explains the crash `"log_softmax_lastdim_kernel_impl" not implemented for 'Long'` (and its
variants) raised by `CrossEntropyLoss` / `F.cross_entropy` when its input is an integer
tensor while its target is a floating-point one: the two arguments are in the wrong order.

## Why is this bad?
Every PyTorch loss takes the prediction first and the target second. Written the other way
round, `CrossEntropyLoss` tries a log-softmax over the integer labels and fails with an error
about a kernel and a dtype, which sends people to cast their labels to float: the error
then changes, and the arguments stay swapped. Verified on torch 2.13.

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
