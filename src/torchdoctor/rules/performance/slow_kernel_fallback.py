"""TD475 slow-kernel-fallback."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD475",
    name="slow-kernel-fallback",
    category=Category.PERFORMANCE,
    severity=Severity.WARNING,
    proof="trace",
    # a convolution whose library kernel was not taken, for a reason not seen
    message="the convolution on this line runs in ATen's fallback kernel ({ops}) instead of {fast}: {share} of each traced step's compute",
    hint="Check the convolution's dtype, layout and arguments against what the library kernel takes (a float64 input, an unusual padding or dilation), and that no code turned the library off.",
    variants={
        "attention": Variant(
            message="the scaled_dot_product_attention on this line runs in ATen's fallback kernel ({ops}) instead of a fused flash or memory-efficient kernel: {share} of each traced step's compute",
            hint="Run this call once under `torch.nn.attention.sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION])`: torch warns why each fused kernel was not used (float32 inputs on the GPU, a head size or mask it does not take, ...) and raises instead of falling back."),
        # the library is turned off: `{flag}` (torch.backends.cudnn.enabled or torch.backends.mkldnn.enabled) is False
        "library-off": Variant(
            message="the convolution on this line runs in ATen's fallback kernel ({ops}) instead of {fast} because `{flag}` is False: {share} of each traced step's compute",
            hint="Remove what turns it off, `{flag} = False` or a `{backend}.flags(enabled=False)` block (a workaround or a reproducibility recipe left in place)."),
        "cudnn-off": Variant(
            message="the convolution on this line runs in ATen's fallback kernel ({ops}) instead of {fast} because `{flag}` is False: {share} of each traced step's compute",
            hint="Remove what turns it off, `{flag} = False` or a `{backend}.flags(enabled=False)` block (a workaround or a reproducibility recipe left in place; for reproducibility, `torch.backends.cudnn.deterministic = True` keeps cuDNN)."),
    },
    doc="""
## What it does
`torchdoctor trace` reports a line whose convolution or attention runs, in every traced step,
in one of ATen's generic fallback kernels rather than the library kernel made for it, when that
takes at least a tenth of a step (the fallback's whole time, forward and backward, read against
the step's compute: its ops outside the DataLoader's fetches and torchdoctor's own):

- a convolution in `aten::_slow_conv2d_forward` / `thnn_conv2d`, `slow_conv3d`,
  `slow_conv_dilated2d/3d` or `slow_conv_transpose2d/3d` (im2col and a matrix product) instead
  of cuDNN on a GPU or oneDNN (mkldnn) on the CPU. The finding says when
  `torch.backends.cudnn.enabled` or `torch.backends.mkldnn.enabled` was False at the end of the
  trace, the usual cause. A float64 convolution also takes this path; that one is TD471's.
- on a GPU, `F.scaled_dot_product_attention` in `aten::_scaled_dot_product_attention_math`
  (the full attention matrix, materialised) instead of a fused flash or memory-efficient kernel.
  On the CPU the math kernel is also the only one for attention with dropout, so it is not
  reported there.

## Why is this bad?
The fallbacks exist so that every call has some kernel; they are many times slower and, for
attention, use memory quadratic in the sequence length. They are taken silently: a
`torch.backends.cudnn.enabled = False` added once to get around a cuDNN error and never
removed, `torch.backends.mkldnn.enabled = False` copied from a reproducibility recipe, or
attention inputs that the fused kernels do not take (float32 on the GPU, a head size they do
not support, some masks). The step is just slower, with no message.

## Example
```python
import torch
from torch import nn

torch.backends.mkldnn.enabled = False  # once a workaround, never removed
torch.manual_seed(0)
model = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 32, 3, padding=1), nn.ReLU(),
                      nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 4))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
images, labels = torch.rand(8, 3, 48, 48), torch.randint(0, 4, (8,))
for step in range(10):
    optimizer.zero_grad()
    nn.functional.cross_entropy(model(images), labels).backward()
    optimizer.step()
```

Use instead:
```python
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 32, 3, padding=1), nn.ReLU(),
                      nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 4))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
images, labels = torch.rand(8, 3, 48, 48), torch.randint(0, 4, (8,))
for step in range(10):
    optimizer.zero_grad()
    nn.functional.cross_entropy(model(images), labels).backward()
    optimizer.step()
```

For attention on a GPU, run the call once under
`torch.nn.attention.sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION])`:
torch then warns why each fused kernel was not used and raises "No available kernel" instead
of falling back.

## References
- [torch.nn.functional.scaled_dot_product_attention](https://pytorch.org/docs/stable/generated/torch.nn.functional.scaled_dot_product_attention.html)
- [torch.backends: cudnn.enabled, mkldnn.enabled](https://pytorch.org/docs/stable/backends.html)
""",
)
