"""TD360 sample-not-batchable."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD360",
    name="sample-not-batchable",
    category=Category.DATA,
    severity=Severity.ERROR,
    proof="run",
    message="{source} returns `{found}` values, which the DataLoader's default collate cannot batch: it batches tensors, NumPy arrays, numbers and strings, and dicts, lists or tuples of them{crashed}",
    hint="Return tensors (or arrays, numbers) from `__getitem__`, or give the DataLoader a `collate_fn` that batches `{found}` values.",
    variants={
        "image": Variant(
            message="{source} returns PIL images, which the DataLoader's default collate cannot batch: a transform that turns them into tensors is missing{crashed}",
            hint="Add `transforms.ToTensor()` (or `transforms.PILToTensor()`) at the end of the dataset's transform: `transforms.Compose([..., transforms.ToTensor()])`.",
        ),
    },
    sees={
        "run": "the crash \"default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found <class '...'>\" (a PIL image: the missing `ToTensor()`), at the `return` of the dataset's `__getitem__` when it has one, else at the loop",
    },
    doc="""
## What it does
Explains the crash "default_collate: batch must contain tensors, numpy arrays, numbers, dicts
or lists; found <class 'PIL.Image.Image'>" (or any other type): names the dataset whose
`__getitem__` returns it and points at its `return` line; for PIL images, the missing
`transforms.ToTensor()`.

## Why is this bad?
The DataLoader's default collate stacks what `__getitem__` returns into batches, and knows
tensors, NumPy arrays, numbers, strings and containers of them. An image dataset whose
transform ends before `ToTensor()` returns PIL images; on torch 2.13 the first batch fails
deep in `torch/utils/data/_utils/collate.py`, with no line of the dataset in the message.

## Example
```python
from PIL import Image
from torch.utils.data import DataLoader, Dataset


class Images(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        return Image.new("RGB", (32, 32)), i % 2


for images, labels in DataLoader(Images(), batch_size=4):
    print(images.shape)
```

Use instead:
```python
import numpy as np
import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset


class Images(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        image = Image.new("RGB", (32, 32))  # what transforms.ToTensor() does, without torchvision:
        return torch.from_numpy(np.asarray(image)).permute(2, 0, 1).float() / 255, i % 2


for images, labels in DataLoader(Images(), batch_size=4):
    print(images.shape)
```
""",
)
