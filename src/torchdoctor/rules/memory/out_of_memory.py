"""TD424 out-of-memory."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

#: the fixes observe/crash/memory.py ranks by their estimated saving, by kind: each is a sentence
#: frame filled from the census (the holder, the device, the block); the variants below put them
#: in the hint alone ("fix-<kind>") or two together ("fixes-<kind>-and-<kind>")
FIXES = {
    "stop-keeping": "Stop keeping tensors across steps in {holder} (store `.item()` or `.detach()`)",
    "zero-grad": "Free the gradients before the forward pass: `optimizer.zero_grad()` with its default `set_to_none=True`",
    "autocast": "Run the forward pass under `torch.autocast(\"{device_type}\", dtype=torch.bfloat16)`",
    "accumulate": "Halve the batch and accumulate gradients over 2 steps (divide the loss by 2, call `step()` every second batch)",
    "checkpoint": "Recompute activations in backward with `torch.utils.checkpoint.checkpoint` around {block} and its neighbours",
    "checkpoint-largest": "Recompute activations in backward with `torch.utils.checkpoint.checkpoint` around the largest blocks and their neighbours",
    "lighter-optimizer": "Use an optimizer with less state (`torch.optim.Adafactor`, or SGD with momentum: one tensor per parameter instead of two)",
}



def _lower(fix: str) -> str:
    """A fix's sentence inside another sentence."""
    return fix[0].lower() + fix[1:]


_VARIANTS = {
    # one tensor larger than half the device (or than 64 GiB on the CPU)
    "huge": Variant(hint="One tensor this large is almost always a shape mistake: check the size of the layer or tensor "
                    "created on this line (a Linear built on a flattened image or feature map?)."),
    # CUDA's message shows much memory reserved but unallocated
    "fragmented": Variant(hint="Much memory is reserved but unused (fragmentation): set "
                          "`PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`; also reduce the batch size or use mixed precision."),
    # the census found none of the fixes below
    "no-fix": Variant(hint="Reduce the batch size or the model: the memory goes to parameters and what the step needs."),
    # the cheapest fix that covers what was missing
    **{f"fix-{kind}": Variant(hint=fix + ": that frees about {saving} ({missing} were missing).") for kind, fix in FIXES.items()},
    # the message did not say how much was asked: the first fix
    **{f"fix-{kind}-unsized": Variant(hint=fix + ": that frees about {saving}.") for kind, fix in FIXES.items()},
    # the only fix found does not cover it
    **{f"fix-{kind}-short": Variant(hint=fix + ": that frees about {saving}, less than the {missing} that were missing.")
       for kind, fix in FIXES.items()},
    # no fix covers it alone: the two that free most (the first frees more)
    **{f"fixes-{first}-and-{second}": Variant(
        hint="No single change frees the {missing} that were missing: " + _lower(FIXES[first]) + " (about {first_saving}) and "
        + _lower(FIXES[second]) + " (about {second_saving}), together.")
       for first in FIXES for second in FIXES if first != second},
}

RULE = Rule(
    code="TD424",
    name="out-of-memory",
    category=Category.MEMORY,
    severity=Severity.ERROR,
    proof="run",
    message="out of memory: {device} cannot allocate {want}{held}",
    hint="Reduce the batch size, use mixed precision (`torch.autocast`) or activation checkpointing, evaluate under "
    "`torch.no_grad()`, and do not keep tensors with their graph across steps.",
    variants=_VARIANTS,
    sees={
        "run": "out of memory (CUDA's message, `torch.OutOfMemoryError`, or the CPU allocator's \"can't allocate memory\"), with the breakdown at the failing line, the largest tensors and the line that makes them, fragmentation when the message shows it, and the cheapest fix whose estimated saving covers what was missing",
    },
    doc="""
## What it does
Explains "CUDA out of memory. Tried to allocate ..." and the CPU allocator's "can't allocate
memory" at the line that allocated, with what the observed models hold (parameters,
gradients, optimizer state), and whether the request itself is implausibly large (a shape
mistake) or memory is fragmented (reserved but unallocated).

## Why is this bad?
The message says how much was requested, not why memory is full. A single request larger
than the device is a shape bug; a full device calls for a smaller batch, mixed precision,
or finding the tensors kept alive across steps.

## Example
```python
import torch
from torch import nn

features = nn.Sequential(nn.Conv2d(3, 256, 3, padding=1), nn.ReLU())
head = nn.Linear(256 * 512 * 512, 4096)  # a 512x512 feature map, flattened
```

Use instead:
```python
import torch
from torch import nn

features = nn.Sequential(nn.Conv2d(3, 256, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1))
head = nn.Linear(256, 4096)
```
""",
)
