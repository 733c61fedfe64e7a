"""TD417 layer-input-shape-mismatch."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD417",
    name="layer-input-shape-mismatch",
    category=Category.API,
    severity=Severity.ERROR,
    proof="run",
    message="{layer} expects {expected} but gets {got}",
    hint="Make the layer's input size match what the layer before it produces (print the shapes once), or use a lazy layer (`nn.LazyLinear`) that infers it.",
    variants={
        # the crash in an nn.Linear
        "linear-in-features": Variant(hint="Set `in_features={features}` for {layer} (what the layer before it produces), or use `nn.LazyLinear` to infer it."),
        # the crash in a matrix multiplication outside a layer
        "matmul": Variant(hint="The inner dimensions must match: check the shapes of both operands (print `.shape`) and transpose or reshape the one that is wrong."),
        # a convolution given a sample without its batch dimension, wanting one channel
        "unbatched-single-channel": Variant(hint="{layer} read the {ndim}-D input {shape} as one sample without a batch dimension, so its first dimension, {first}, was read as channels. If {first} is the batch, the samples lack their channel dimension: `x.unsqueeze(1)` makes them (N, {channels}, ...)."),
        # the same, wanting more channels
        "unbatched": Variant(hint="{layer} read the {ndim}-D input {shape} as one sample without a batch dimension, so its first dimension, {first}, was read as channels. Give it (N, {channels}, ...): `x.unsqueeze(0)` for a single sample."),
        # a convolution given channels-last images
        "channels-last": Variant(hint="The input is channels-last (N, H, W, C): permute it to (N, C, H, W) with `x.permute(0, 3, 1, 2)` (images from PIL/NumPy are HWC)."),
        # a convolution built for another number of channels
        "in-channels": Variant(hint="Give {layer} `in_channels={in_channels}`, or fix the layer before it so it produces {channels} channels."),
    },
    doc="""
## What it does
Explains shape crashes between layers, "mat1 and mat2 shapes cannot be multiplied (64x512
and 256x10)" and "expected input[...] to have 3 channels, but got 224 channels instead", by
naming the layer (`Linear` `fc`), what it was built for (`in_features=256`) and what it got.
For convolutions it recognises channels-last images.

## Why is this bad?
The raw message gives matrix sizes, not layers. The cause is usually an `in_features`
computed for another input size (after flatten), or images in (N, H, W, C) layout.

## Example
```python
import torch
from torch import nn

model = nn.Sequential(
    nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Flatten(),
    nn.Linear(8 * 32 * 32, 10),
)
out = model(torch.randn(2, 3, 32, 32))
```

Use instead:
```python
import torch
from torch import nn

model = nn.Sequential(
    nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Flatten(),
    nn.Linear(8 * 30 * 30, 10),
)
out = model(torch.randn(2, 3, 32, 32))
```
""",
)
