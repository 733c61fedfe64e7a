"""TD133 evaluation-in-train-mode."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

_DROPOUT_EFFECT = "dropout keeps zeroing activations"
_BATCHNORM_EFFECT = "batch-norm normalises with each batch's statistics and overwrites its running statistics with this data"


def train_mode_effects(dropout: bool, batchnorm: bool) -> str:
    """The `{effects}` of the message: what train mode does in an evaluation ("" for nothing)."""
    return " and ".join(effect for effect, present in ((_DROPOUT_EFFECT, dropout), (_BATCHNORM_EFFECT, batchnorm)) if present)

RULE = Rule(
    code="TD133",
    name="evaluation-in-train-mode",
    category=Category.MODE,
    severity=Severity.WARNING,
    proof="lint",
    message="{model} is evaluated in train mode (under no_grad, with no optimizer step between the forward passes): {effects}",
    hint="Call `model.eval()` before evaluating and `model.train()` before training resumes (for Monte Carlo dropout on purpose, call `model.train()` right before that loop).",
    variants={
        # a validation that is one forward pass, after each round of training steps
        "one-forward": Variant(message="{model} is evaluated in train mode (one forward pass under no_grad after each round of optimizer steps): {effects}"),
    },
    sees={
        "lint": "a trained model with dropout/batch-norm (same-file class, `nn.Sequential`, torchvision builder; also through a function parameter every call passes it to) called under `no_grad`/`inference_mode` outside the training step, in a file with no `.eval()` anywhere",
        "run": "a trained model with dropout or batch-norm runs three or more forward passes under `no_grad` with no optimizer step between them (an evaluation), or one at the same line after two different steps that the source places after every backward() of the loop that trains (a full-batch validation each epoch), while in train mode; a no-grad forward before the backward() of its pass (a GAN's fake batch, pseudo-labels, an action) or under an `if` in the step loop (a sample every few steps) and a `model.train()` called after the last step (Monte Carlo dropout) are left alone; reported at the forward call",
    },
    doc="""
## What it does
Flags a trained model with dropout or batch-norm layers that is evaluated under
`torch.no_grad()` (or `torch.inference_mode()`) while still in train mode. Lint reads it from
a file that trains the model (an optimizer over its parameters, a loop with `backward()` and
`step()`), calls it with autograd off outside the training loop's own iterations (a
validation loop, a prediction after training), and never calls `.eval()` or `.train(...)`
with an argument anywhere. `torchdoctor run` sees it happen: several no-grad forward passes of
the trained model with no optimizer step between them while its dropout or batch-norm layers
are in train mode, or a validation that is one forward pass (the whole validation set as one
batch): the same line run under no_grad after two different steps, where the source puts it
after every backward() of the loop that trains; at the line of the forward call (in a script
that updates its weights by hand, without a `torch.optim` optimizer, backward() calls stand for
the steps and the models they gave gradients for are the trained ones). A no-grad forward inside the training
step (a GAN's generated batch, pseudo-labels, a target network, an action, a sample drawn every
few steps) is part of training and left alone, and so is a model switched with `model.train()` after its last step (Monte Carlo
dropout, batch-norm recalibration), which says the mode is meant.

## Why is this bad?
`torch.no_grad()` turns off autograd, not training behaviour: dropout keeps zeroing
activations, and batch-norm normalises with the statistics of each validation batch and
overwrites its running statistics with validation data, which the next training steps and the
saved model then use. Validation metrics come out noisy and worse than the model is, and model
selection picks the wrong checkpoint.

## Example
```python
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Dropout(0.5), nn.Linear(32, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for epoch in range(2):
    model.train()
    for _ in range(5):
        optimizer.zero_grad()
        model(torch.randn(16, 8)).pow(2).mean().backward()
        optimizer.step()
    with torch.no_grad():
        val = sum(model(torch.randn(16, 8)).pow(2).mean().item() for _ in range(4))
    print(epoch, val)
```

Use instead:
```python
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Dropout(0.5), nn.Linear(32, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for epoch in range(2):
    model.train()
    for _ in range(5):
        optimizer.zero_grad()
        model(torch.randn(16, 8)).pow(2).mean().backward()
        optimizer.step()
    model.eval()
    with torch.no_grad():
        val = sum(model(torch.randn(16, 8)).pow(2).mean().item() for _ in range(4))
    print(epoch, val)
```
""",
)
