"""TD419 embedding-index-out-of-range."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD419",
    name="embedding-index-out-of-range",
    category=Category.DATA,
    severity=Severity.ERROR,
    proof="run",
    message="{layer} has {size} rows (ids 0..{last}) but receives id {index}",
    hint="Make `num_embeddings` at least the largest id + 1 (the vocabulary size with its special tokens), or fix the ids (tokenizer, padding id, offset).",
    doc="""
## What it does
Explains "IndexError: index out of range in self" raised by an `nn.Embedding`, naming the
layer, its number of rows and the offending id. (On a GPU the same bug is a "device-side
assert triggered" reported at a later line.)

## Why is this bad?
Ids must lie in `0 .. num_embeddings - 1`. A vocabulary that grew (special tokens added), a
padding id equal to the vocabulary size, or ids counted from 1 all overflow.

## Example
```python
import torch
from torch import nn

vocabulary = ["<pad>", "the", "cat", "sat"]
embed = nn.Embedding(len(vocabulary), 16)
tokens = torch.tensor([[1, 2, 3, 4]])
vectors = embed(tokens)
```

Use instead:
```python
import torch
from torch import nn

vocabulary = ["<pad>", "the", "cat", "sat", "down"]
embed = nn.Embedding(len(vocabulary), 16)
tokens = torch.tensor([[1, 2, 3, 4]])
vectors = embed(tokens)
```
""",
)
