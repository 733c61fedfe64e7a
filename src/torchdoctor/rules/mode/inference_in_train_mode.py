"""TD340 inference-in-train-mode."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

_DROPOUT = "its dropout layers ({dropout}) zero activations at random"
_BATCHNORM = "its batch-norm layers ({batchnorm}) normalise each batch by its own statistics and overwrite the loaded running statistics"
_MESSAGE = ("{model} runs inference in train mode (weights loaded at {loaded}, nothing trains it, never switched "
            "to eval()): {effects}")

RULE = Rule(
    code="TD340",
    name="inference-in-train-mode",
    category=Category.MODE,
    severity=Severity.WARNING,
    proof="lint",
    message=_MESSAGE.format(model="{model}", loaded="{loaded}", effects=f"{_DROPOUT} and {_BATCHNORM}"),
    hint="Call `model.eval()` after loading the weights, before the first prediction (for Monte Carlo dropout on purpose, call `model.train()` there instead, which says so).",
    variants={
        "dropout": Variant(message=_MESSAGE.format(model="{model}", loaded="{loaded}", effects=_DROPOUT)),
        "batchnorm": Variant(message=_MESSAGE.format(model="{model}", loaded="{loaded}", effects=_BATCHNORM)),
    },
    sees={
        "lint": "a file with no training (no `backward`, optimizer or trainer) and no `eval()`/`train()` call that loads weights into a model whose dropout or batch-norm layers it shows (a class of the file, `nn.Sequential`, a torchvision builder), then calls it; at that first call after the load",
        "run": "a module whose weights `load_state_dict` loaded, called with dropout (p > 0) or batch-norm (with running statistics) layers in train mode, in a run that completes with no backward() and no `train()`/`eval()` call on it or around it; at the line of its first such call",
    },
    doc="""
## What it does
Flags a model used for inference (a prediction, an evaluation, a feature extraction, an
export) in train mode. Lint reads it from a file that trains nothing (no `backward()`, no
optimizer, no trainer) and switches no module's mode (`eval()`, `train(...)`), loads weights
into a model whose dropout or batch-norm layers the file shows, then calls it: the first call
after the load is reported. `torchdoctor run` sees it: a module whose weights were loaded with
`load_state_dict` (a checkpoint, a pretrained torchvision model) is called while its dropout
layers (with `p > 0`) or batch-norm layers (keeping running statistics) are in train mode, in a
run that finishes without any `backward()`: nothing trains the model, so train mode is not
needed, and nothing called `model.eval()`, `model.train(False)` or `model.train()` on it or on
a module around it. The finding points at the line of the first such call. A run that trains
(any `backward()`) is left to TD133, and a model switched with `model.train()` on purpose
(Monte Carlo dropout, pix2pix's noise) is left alone.

## Why is this bad?
A module starts in train mode, and loading weights does not change it. `torch.no_grad()` turns
off autograd, not training behaviour: dropout keeps zeroing a fraction of the activations (and
scaling the rest), so predictions are noisy and change from run to run; batch-norm normalises
each batch with its own mean and variance instead of the running statistics learnt in training
(predictions depend on what else is in the batch, and a batch of one fails), and overwrites the
loaded running statistics with the inference data. Accuracy comes out lower than the model's,
for no visible reason.

## Example
```python
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Dropout(0.3), nn.Linear(32, 3))
torch.save(model.state_dict(), "weights.pt")

model.load_state_dict(torch.load("weights.pt"))
with torch.no_grad():
    for batch in torch.randn(64, 8).split(16):
        print(model(batch).argmax(dim=1).tolist())
```

Use instead:
```python
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Dropout(0.3), nn.Linear(32, 3))
torch.save(model.state_dict(), "weights.pt")

model.load_state_dict(torch.load("weights.pt"))
model.eval()
with torch.no_grad():
    for batch in torch.randn(64, 8).split(16):
        print(model(batch).argmax(dim=1).tolist())
```
""",
)
