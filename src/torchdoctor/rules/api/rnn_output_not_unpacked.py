"""TD567 rnn-output-not-unpacked."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD567",
    name="rnn-output-not-unpacked",
    category=Category.API,
    severity=Severity.ERROR,
    proof="run",
    message="`{name}` is the tuple `{layer}` returns, ({parts}), not its output tensor{crashed}",
    hint="Unpack it where the layer is called: `{name}, {state} = {call}` (the output of every step is the first item).",
    sees={
        "run": "a crash on a tuple (\"tuple indices must be integers or slices, not tuple\", \"must be Tensor, not tuple\", \"'tuple' object has no attribute 'shape'\") whose value a name took from an `nn.LSTM`/`nn.GRU`/`nn.RNN` call; at the line that bound it",
    },
    doc="""
## What it does
Explains a crash on a tuple ("tuple indices must be integers or slices, not tuple",
"linear(): argument 'input' (position 1) must be Tensor, not tuple", "'tuple' object has no
attribute 'view'") when the tuple is what an `nn.LSTM`, `nn.GRU` or `nn.RNN` returned, kept
whole in one name, and points at the line that bound it.

## Why is this bad?
Recurrent layers return two things: the output of every step and the last hidden state
(`(h_n, c_n)` for an LSTM). On torch 2.13, `out = self.lstm(x)` binds the pair, and the next
line that treats `out` as a tensor fails with a message about tuples, one line away from the
cause.

## Example
```python
import torch
from torch import nn


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(8, 16, batch_first=True)
        self.fc = nn.Linear(16, 2)

    def forward(self, x):
        out = self.lstm(x)
        return self.fc(out[:, -1])


Tagger()(torch.randn(4, 5, 8))
```

Use instead:
```python
import torch
from torch import nn


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(8, 16, batch_first=True)
        self.fc = nn.Linear(16, 2)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.fc(out[:, -1])


Tagger()(torch.randn(4, 5, 8))
```
""",
)
