"""TD302 batch-samples-mixed."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD302",
    name="batch-samples-mixed",
    category=Category.DATA,
    severity=Severity.WARNING,
    proof="check",
    message="in eval mode, the output for sample {sample} depends on the inputs of other samples in the batch (gradient {other:.2g} toward them, {own:.2g} toward its own input): forward() mixes the batch",
    hint="Look for view()/reshape() that moves the batch dimension (use transpose()/permute() to swap dimensions), reductions over dim 0, or an RNN fed (batch, seq, ...) without batch_first=True.",
    variants={
        # run: a sequence layer without batch_first given the DataLoader's batch in dim 0
        "sequence-not-batch-first": Variant(message="{kind} `{layer}` (batch_first=False) gets input {shape} whose dim 0 is the DataLoader's batch size {batch}: it reads dim 0 as time and dim 1 ({dim1}) as the batch, so the samples of each batch are processed as one sequence and their outputs depend on each other", hint="Build it with `{kind}(..., batch_first=True)`, or pass `x.transpose(0, 1)` (time first) and read the output the same way."),
        # the crash of an RNN built without batch_first=True fed (batch, seq, features)
        "rnn-not-batch-first": Variant(message="{layer} is built without batch_first=True, so it reads its input {shape} as (seq={batch}, batch={seq}, features) and wants a hidden state for batch {seq}; the hidden state is {hidden} for batch {batch}, the input's dim 0: the input is (batch, seq, features){crashed}", hint="Pass `batch_first=True` to `{kind}(...)` (the hidden state stays (layers, batch, hidden)), or feed `x.transpose(0, 1)`."),
    },
    sees={
        "run": "an `nn.LSTM`/`GRU`/`RNN`, `nn.MultiheadAttention` or `nn.Transformer*Layer` with `batch_first=False` gets an input whose dim 0 is the DataLoader's `batch_size` and whose dim 1 is neither that nor 1 (warm-up steps); time-first input (transposed, or collated by `pad_sequence`) is not; reported at the call of the layer",
    },
    doc="""
## What it does
Puts the model in eval mode, runs one batch, and takes the gradient of one sample's output
with respect to every sample's input. In a model that treats samples independently, the
gradient with respect to the *other* samples is exactly zero. (Batch norm in training mode
mixes the batch on purpose, which is why the check runs in eval mode.) `torchdoctor run` sees
the most common cause as it happens: an `nn.LSTM`/`GRU`/`RNN`, `nn.MultiheadAttention` or
`nn.Transformer*Layer` built without `batch_first=True` (so it reads dim 0 as time) getting
an input whose dim 0 is the DataLoader's `batch_size` and whose dim 1 is something else,
and points at the line that built the layer when it is a `self.<name> = nn.LSTM(...)` in
your module's `__init__`.
When such an `nn.LSTM`/`GRU`/`RNN` is also given a hidden state built for dim 0
(`torch.zeros(layers, x.size(0), hidden)`), it crashes with "Expected hidden size (2, 28, 128),
got [2, 100, 128]"; `torchdoctor run` explains that crash as this bug, at the line that built
the layer.

## Why is this bad?
`x.view(seq, batch, features)` on a `(batch, seq, features)` tensor has the right shape and
raises nothing, but each "sequence" is now made of pieces of several samples. So is a
`reshape` that moves the batch dimension, or a softmax/mean over dim 0. Predictions then
depend on which other samples share the batch: the model trains to poor accuracy and
evaluates differently with another batch size. A model whose samples are meant to interact
(a graph of nodes, a set) is the exception, hence a warning.

## Example
```python
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(8, 16)
        self.head = nn.Linear(16, 3)

    def forward(self, x):  # (batch, seq, features)
        batch, seq, features = x.shape
        out, _ = self.rnn(x.view(seq, batch, features))
        return self.head(out[-1])

def make():
    x, y = torch.randn(8, 5, 8), torch.arange(8) % 3
    return {"model": Net(), "data": (x, y), "loss_fn": nn.CrossEntropyLoss()}
```

Use instead:
```python
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(8, 16)
        self.head = nn.Linear(16, 3)

    def forward(self, x):  # (batch, seq, features)
        out, _ = self.rnn(x.transpose(0, 1))
        return self.head(out[-1])

def make():
    x, y = torch.randn(8, 5, 8), torch.arange(8) % 3
    return {"model": Net(), "data": (x, y), "loss_fn": nn.CrossEntropyLoss()}
```

## References
- A. Karpathy, [A Recipe for Training Neural Networks](https://karpathy.github.io/2019/04/25/recipe/): "use backprop to chart dependencies"
""",
)
