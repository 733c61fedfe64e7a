"""TD426 samples-differ-in-size."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD426",
    name="samples-differ-in-size",
    category=Category.DATA,
    severity=Severity.ERROR,
    proof="run",
    message="the DataLoader's default collate cannot stack samples of different sizes: {first} (sample {i} of the batch) and {second} (sample {j}){dataset}",
    hint="Give every sample the same size in the Dataset (resize or crop in its transform), or pass the DataLoader a `collate_fn` that pads (`torch.nn.utils.rnn.pad_sequence`) or keeps a list.",
    doc="""
## What it does
Explains the crash "stack expects each tensor to be equal size, but got [3, 224, 224] at entry
0 and [3, 200, 300] at entry 1" when it comes from the DataLoader's default `collate_fn`
(in the main process or in a worker): it names the two sizes and the Dataset, at the line of
your loop that asked for the batch. A `torch.stack` in your own code that fails is left to
the generic crash report.

## Why is this bad?
The default collate builds a batch with `torch.stack`, which needs every sample to have the
same shape. Images of different sizes, sentences of different lengths or a variable number of
boxes per image make the first batch (or a rare later one) fail, deep inside PyTorch, with
a message that does not say which dataset or what to change.

## Example
```python
import torch
from torch.utils.data import DataLoader, Dataset

class Sentences(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        return torch.randn(5 + i, 16)

for batch in DataLoader(Sentences(), batch_size=4):
    print(batch.shape)
```

Use instead:
```python
import torch
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader, Dataset

class Sentences(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        return torch.randn(5 + i, 16)

def pad(samples):
    return pad_sequence(samples, batch_first=True)

for batch in DataLoader(Sentences(), batch_size=4, collate_fn=pad):
    print(batch.shape)
```
""",
)
