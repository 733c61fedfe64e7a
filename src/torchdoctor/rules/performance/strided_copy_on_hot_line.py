"""TD473 strided-copy-on-hot-line."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD473",
    name="strided-copy-on-hot-line",
    category=Category.PERFORMANCE,
    severity=Severity.INFO,
    proof="trace",
    message="{copies} copy per step gathers a non-contiguous tensor{shape} into new memory on this line: {share} of each traced step's compute",
    hint="Change the layout once, outside the step: store the data in the layout the model reads (images permuted to NCHW when the dataset is built, `memory_format=torch.channels_last` for convolutions), or let the next op read the strided tensor directly instead of calling `.contiguous()`.",
    doc="""
## What it does
`torchdoctor trace` records, for every copy an op makes, whether its source was laid out
contiguously. It reports a line whose copies from non-contiguous tensors (the `.contiguous()`,
`.reshape()`, `.clone()` or `.to()` of a transposed, permuted or sliced tensor) happen in every
traced step and take at least a tenth of a step (read against the step's compute: its ops outside the
DataLoader's fetches and torchdoctor's own, on the same clock, step by step; the median over the traced steps). Copies made inside a
computing op (`torch.stft` framing its signal, a matmul packing an operand) are how that op
works and are not counted. It is advice: some such copies are the price of a layout change
that is needed.

## Why is this bad?
A transposed or permuted tensor is a view: its elements are not in order in memory. Making
it contiguous reads them one stride at a time into a new tensor, which is slow (cache
misses) and allocates memory on every step. When the layout is the same every step (images
decoded as NHWC, a weight used transposed), doing it once outside the loop removes the cost;
convolutions also read the permuted tensor directly as `channels_last`.

## Example
```python
import torch
from torch import nn

torch.manual_seed(0)
images = torch.rand(64, 96, 96, 3)  # decoded images: N, H, W, C
labels = torch.randint(0, 4, (64,))
model = nn.Sequential(nn.AvgPool2d(8), nn.Flatten(), nn.Linear(3 * 12 * 12, 4))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(12):
    x = images.permute(0, 3, 1, 2).contiguous()  # every step
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(x), labels)
    loss.backward()
    optimizer.step()
```

Use instead:
```python
import torch
from torch import nn

torch.manual_seed(0)
images = torch.rand(64, 96, 96, 3).permute(0, 3, 1, 2).contiguous()  # once: N, C, H, W
labels = torch.randint(0, 4, (64,))
model = nn.Sequential(nn.AvgPool2d(8), nn.Flatten(), nn.Linear(3 * 12 * 12, 4))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(12):
    x = images
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(x), labels)
    loss.backward()
    optimizer.step()
```
""",
)
