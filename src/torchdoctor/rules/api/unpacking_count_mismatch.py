"""TD575 unpacking-count-mismatch."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD575",
    name="unpacking-count-mismatch",
    category=Category.API,
    severity=Severity.ERROR,
    proof="run",
    message="`{target} = {value}` unpacks a tensor of shape {shape}: unpacking splits its first dimension, into {count} values, not {expected}",
    hint="Pass or return the pair itself (`return a, b`), not one stacked tensor; to split a tensor on purpose, say how: `{target} = {value}.unbind(0)` or `{value}.chunk({expected}, dim=...)`.",
    variants={
        "dict": Variant(
            message="`{target} = {value}` unpacks a dict: that gives its {count} keys ({keys}), not {expected} values",
            hint="Take the values by key (`{value}[\"...\"]`), or unpack `{value}.values()` when their order is the one you mean.",
        ),
        "sequence": Variant(
            message="`{target} = {value}` unpacks a {kind} of {count} items into {expected} names",
            hint="Make the two sides agree: check what produced `{value}` (a function that returns more or fewer values than this line expects).",
        ),
        "dict-iterated": Variant(
            message="the loop `for {target} in {value}` iterates a dict, which gives its keys ({keys}), not (key, value) pairs",
            hint="Iterate its pairs: `for {target} in {value}.items()`.",
        ),
        "tensor-iterated": Variant(
            message="the loop `for {target} in {value}` iterates a tensor of shape {shape}: each item is a row of shape {row}, which unpacks into {count} values, not {expected}",
            hint="Iterate what holds the pairs (`zip(a, b)`), or index the row's columns: `for row in {value}: first, second = row[0], row[1]`.",
        ),
    },
    sees={
        "run": "the crash \"too many values to unpack (expected 2)\" (or \"not enough values\") at the user's line, when the one unpacking there that binds as many names unpacks a variable (or an attribute chain) holding a tensor, a dict or a tuple or list of another length, or loops over a dict or a 2-d tensor",
    },
    doc="""
## What it does
Explains the crash "ValueError: too many values to unpack (expected 2)" (or "not enough values
to unpack") at the user's line by what was unpacked: a tensor, whose unpacking splits its first
dimension (a batch of 4 unpacked into `img, mask` gives 4 values); a dict, whose iteration gives
its keys, not (key, value) pairs; a tuple or list of another length.

## Why is this bad?
Python's message names neither the value nor why it has that many items. The usual causes in
training code: a batch stacked into one tensor where a pair was expected (`img, mask = batch`
with a collate that stacked both), a dict of outputs looped over without `.items()`, a function
that returns more or fewer values than its caller unpacks.

## Example
```python
import torch
import torch.nn.functional as F

logits = {"image": torch.randn(4, 4), "text": torch.randn(4, 4)}
labels = torch.arange(4)
loss = sum(F.cross_entropy(scores, labels) for _, scores in logits)
```

Use instead:
```python
import torch
import torch.nn.functional as F

logits = {"image": torch.randn(4, 4), "text": torch.randn(4, 4)}
labels = torch.arange(4)
loss = sum(F.cross_entropy(scores, labels) for _, scores in logits.items())
```
""",
)
