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
        # a convolution given one sample of spatial dimensions only ((28, 28) to a single-channel Conv2d)
        "no-channel-no-batch-single-channel": Variant(
            message="{layer} expects a {batched}-D (N, C, ...) input, or {unbatched}-D for one sample, but gets `{name}` of shape {shape}",
            hint="`{name}` has neither a batch nor a channel dimension: `{name}.unsqueeze(0).unsqueeze(0)` (or `{name}[None, None]`) makes it one sample of shape {fixed}; batch samples with a DataLoader or `torch.stack`.",
        ),
        # the same, for a convolution built for several channels
        "no-channel-no-batch": Variant(
            message="{layer} expects a {batched}-D (N, C, ...) input, or {unbatched}-D for one sample, but gets `{name}` of shape {shape}",
            hint="`{name}` has neither a batch nor a channel dimension, and {layer} wants {channels} channels: give it (N, {channels}, ...), e.g. an image read as grayscale where the model expects color (convert it to RGB), or build the layer with `in_channels=1`.",
        ),
        # a convolution given an input with a dimension too many, one of size 1
        "extra-dimension": Variant(
            message="{layer} expects a {batched}-D (N, C, ...) input, or {unbatched}-D for one sample, but gets `{name}` of shape {shape}",
            hint="`{name}` has a dimension too many: `{name}.squeeze({axis})` drops its size-1 dimension {axis} (often an `unsqueeze` added to samples that already had their channel dimension).",
        ),
        # any other number of dimensions given to a convolution
        "dimensions": Variant(
            message="{layer} expects a {batched}-D (N, C, ...) input, or {unbatched}-D for one sample, but gets `{name}` of shape {shape}",
            hint="Reshape `{name}` to (N, {channels}, ...) with {spatial} spatial dimension(s) before {layer}.",
        ),
        # an RNN/LSTM/GRU given an input of neither 2 nor 3 dimensions, one of them of size 1
        "rnn-extra-dimension": Variant(
            message="{layer} expects a 3-D input {order}, or 2-D for one sequence, but gets `{name}` of shape {shape}",
            hint="`{name}` has a dimension too many: `{name}.squeeze({axis})` drops its size-1 dimension {axis} (often an `unsqueeze` added to sequences that already had their batch dimension).",
        ),
        # the same, with no dimension of size 1 to drop
        "rnn-dimensions": Variant(
            message="{layer} expects a 3-D input {order}, or 2-D for one sequence, but gets `{name}` of shape {shape}",
            hint="Reshape `{name}` to {order} before {layer}: the features last, one vector per time step.",
        ),
        # a convolution or pooling whose input has shrunk below its kernel through the layers before it
        "input-too-small": Variant(
            message="{layer} gets a {size} feature map ({shape}), smaller than its {kernel} kernel: the {model_shape} input of `{model}` has shrunk below what this layer needs on its way through the layers before it",
            hint="Give `{model}` larger inputs, or shrink them less before {layer}: fewer pooling or stride-2 layers, `padding=` on the convolutions, or an `nn.AdaptiveAvgPool2d`/`AdaptiveMaxPool2d` to a fixed size before the layers that need one.",
        ),
        # the same, for a layer called on its own
        "input-too-small-direct": Variant(
            message="{layer} gets a {size} input ({shape}), smaller than its {kernel} kernel",
            hint="Give {layer} an input at least as large as its kernel (pad it, or use a smaller `kernel_size`).",
        ),
        # an RNN/LSTM/GRU whose input's last dimension is not its input_size
        "rnn-input-size": Variant(hint="Build {layer} with `input_size={features}` (what its input carries in the last dimension), or put the features last: it reads (batch, seq, features) with `batch_first=True`, else (seq, batch, features)."),
        # the same, with the features in another dimension of the input
        "rnn-features-elsewhere": Variant(hint="The input has {expected_n} in dimension {axis}, not the last one: {layer} reads the features from the last dimension, so move them there (`x.transpose({axis}, -1)` or `x.permute(...)`)."),
        # a batch-norm layer built for another number of channels
        "norm-features": Variant(hint="Build {layer} with `num_features={features}`: the channels (dim 1) of what the layer before it produces."),
        # a batch-norm layer of the wrong kind for its input's dimensions (BatchNorm1d after a Conv2d)
        "rnn-hidden-batch": Variant(
            message="{layer} gets a hidden state {hidden} made for a batch of {hidden_batch} with an input batch of {batch}{made}",
            hint="Make the hidden state from the batch at hand: `torch.zeros(num_layers, x.size(0), hidden_size, device=x.device)` (`x.size(1)` without batch_first), or pass none; a fixed batch size fails on the last, smaller batch, and a state carried over keeps its batch's size.",
        ),
        "layer-norm-shape": Variant(
            message="{layer} expects {expected} but gets {got}{crashed}",
            hint="Build {layer} for the trailing dimensions its input has (`nn.LayerNorm({tail})`), or normalize the dimension you meant: LayerNorm normalizes the last dimensions, those `normalized_shape` names.",
        ),
        "norm-kind": Variant(hint="A {ndim}-D input {shape} wants `nn.{right}({channels})`: BatchNorm1d is for (N, C) and (N, C, L), BatchNorm2d for (N, C, H, W), BatchNorm3d for (N, C, D, H, W)."),
        # `x.view(-1, 320)` on a tensor whose samples hold another number of values, before a Linear built for 320
        "flatten-size": Variant(
            message="`{call}` wants {want} values per sample but `{name}` has shape {shape}, {per_sample} per sample",
            hint="Flatten per sample with `torch.flatten({name}, 1)` (or `{name}.view({name}.size(0), -1)`), which never folds values into the batch, and build {layer} with `in_features={per_sample}` (or use `nn.LazyLinear`).",
        ),
        # the same, with no Linear of that size to name
        "flatten-size-no-layer": Variant(
            message="`{call}` wants {want} values per sample but `{name}` has shape {shape}, {per_sample} per sample",
            hint="Flatten per sample with `torch.flatten({name}, 1)` (or `{name}.view({name}.size(0), -1)`), which never folds values into the batch, and size the layer after it for {per_sample} features (or use `nn.LazyLinear`).",
        ),
    },
    doc="""
## What it does
Explains shape crashes between layers, "mat1 and mat2 shapes cannot be multiplied (64x512
and 256x10)" and "expected input[...] to have 3 channels, but got 224 channels instead", by
naming the layer (`Linear` `fc`), what it was built for (`in_features=256`) and what it got.
For convolutions it recognises channels-last images, and inputs without their batch and
channel dimensions ("Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of
size: [28, 28]") or with one too many. A flatten written as `x.view(-1, 320)` whose samples
hold another number of values ("shape '[-1, 320]' is invalid for input of size 2000") is
explained with the real size per sample and the Linear built for the wrong one. Recurrent
layers given an input of another number of dimensions ("LSTM: Expected input to be 2D or 3D,
got 4D instead") or built for another number of features ("input.size(-1) must be equal to
input_size") and batch-norm layers ("running_mean
should contain 20 elements not 10") built for another number of features are named too, and
a batch-norm layer of the wrong kind for its input ("expected 4D input (got 2D input)"). A
`LayerNorm` built for other trailing dimensions than its input has ("Given
normalized_shape=[64], expected input with shape [*, 64]") is pointed at where your module
built it, with the line that crashed. An RNN given a hidden state made for another batch than
its input's ("Expected hidden size (1, 3, 8), got [1, 16, 8]": a state made with a fixed
`batch_size` meeting the short last batch, or one carried over from another batch) is pointed
at the line that made the state. A
convolution or pooling layer whose input has shrunk below its kernel ("Kernel size can't be
greater than actual input size", "Output size is too small") is named with the size it got and
the model's input, which the layers before it shrank too far.

## Why is this bad?
The raw message gives matrix sizes, not layers. The cause is usually an `in_features`
computed for another input size (after flatten), or images in (N, H, W, C) layout.
`x.view(-1, n)` with a wrong `n` is worse than a crash when it happens to divide: it folds
values of one sample into the batch, and the loss then fails on the batch size (TD418).

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
