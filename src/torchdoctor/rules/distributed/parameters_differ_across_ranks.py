"""TD460 parameters-differ-across-ranks."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD460",
    name="parameters-differ-across-ranks",
    category=Category.DISTRIBUTED,
    severity=Severity.ERROR,
    proof="run",
    # its gradient differs, with no DistributedDataParallel seen (run/ranks.py picks the variants by when it first differs)
    message="parameter `{param}` differs across ranks from optimizer step {step} on (its gradient, {odd} vs rank {reference}): "
    "its gradient is not averaged across ranks like the others",
    hint="Every rank must apply the same update to the same weights: call the DistributedDataParallel wrapper itself (`model(x)`, not `model.module(x)`), seed the model identically on every rank, and change parameters only on all ranks at once.",
    variants={
        # before the first step, in a model DistributedDataParallel wrapped (and so made equal)
        "changed-after-wrapping": Variant(
            message="parameter `{param}` differs across ranks before the first optimizer step ({odd} vs rank {reference}): "
            "DistributedDataParallel made them equal when it was built at {ddp_at}, so something changed them on some ranks "
            "afterwards (weights loaded on one rank after wrapping, an in-place change under a rank condition)",
            hint="Load checkpoints and change weights before wrapping the model in DistributedDataParallel (it broadcasts "
            "rank 0's weights), or on every rank."),
        # before the first step, without DistributedDataParallel
        "different-start": Variant(
            message="parameter `{param}` differs across ranks before the first optimizer step ({odd} vs rank {reference}): "
            "the ranks start from different weights",
            hint="Seed the model identically on every rank before building it (`torch.manual_seed(seed)`; keep `seed + rank` "
            "for data only), or broadcast rank 0's parameters once before training (DistributedDataParallel does both)."),
        # the same, with gradients averaged by hand
        "different-start-synced": Variant(
            message="parameter `{param}` differs across ranks before the first optimizer step ({odd} vs rank {reference}): "
            "the ranks start from different weights, and averaging the gradients by hand at {synced_at} keeps them different",
            hint="Seed the model identically on every rank before building it (`torch.manual_seed(seed)`; keep `seed + rank` "
            "for data only), or broadcast rank 0's parameters once before training (DistributedDataParallel does both)."),
        # equal after one step, different before the next
        "changed-between-steps": Variant(
            message="parameter `{param}` differs across ranks between optimizer steps {previous} and {step} ({odd} vs rank "
            "{reference}): they were equal after step {previous} and changed outside the optimizer on some ranks only (an "
            "in-place update or loaded weights under a rank condition)"),
        # its gradient differs: a training forward that bypasses the DDP wrapper
        "wrapper-bypassed": Variant(
            message="parameter `{param}` differs across ranks from optimizer step {step} on (its gradient, {odd} vs rank "
            "{reference}): the training forward at {bypass_at} calls the model inside DistributedDataParallel directly "
            "(`model.module(...)`), so backward() does not average the gradients",
            hint="Call the DDP wrapper itself in training steps (`model(x)`); keep `model.module` for saving and for "
            "evaluation without gradients."),
        # its gradient differs under DistributedDataParallel
        "not-averaged": Variant(
            message="parameter `{param}` differs across ranks from optimizer step {step} on (its gradient, {odd} vs rank "
            "{reference}): DistributedDataParallel did not average this step's gradients (a forward outside the wrapper, "
            "`no_sync()` on a step that updates, or gradients changed after backward() on some ranks)"),
        # equal gradients, different learning rates
        "learning-rates-differ": Variant(
            message="parameter `{param}` differs across ranks after optimizer step {step} ({odd} vs rank {reference}): the "
            "gradients were equal but the learning rates differ: {lrs}",
            hint="Make the optimizer's settings (learning rate, schedule, weight decay) the same on every rank."),
        # equal gradients, a different update
        "update-differs": Variant(
            message="parameter `{param}` differs across ranks after optimizer step {step} ({odd} vs rank {reference}): the "
            "gradients were equal but the update differs across ranks (optimizer state or settings that depend on the rank)"),
    },
    doc="""
## What it does
At run time (`torchdoctor run`, several ranks), compares the parameters of a data-parallel model
across ranks: a model wrapped in `DistributedDataParallel`, or one whose gradients the script
all-reduces itself. Each rank writes a checksum of every parameter's bits, and of its gradient,
before and after the first optimizer steps and then at sparse steps (2, 4, 8, ..., then every
1024th) to its own record file; the runner compares them when the job ends. Nothing is sent
between the ranks. It names the first parameter and step where the ranks differ, and why: the
ranks started from different weights, their gradients were not averaged (DDP bypassed by
calling `model.module(x)`, noting which line did it), or the same gradients gave different
updates (a learning rate that depends on the rank, an update made on some ranks only).

## Why is this bad?
Data parallelism trains one model on several ranks: it works only while every replica holds
the same weights. Once they differ, each rank trains its own model on its own shard, the
checkpoint saved by rank 0 is not the model that was evaluated elsewhere, and nothing fails:
DDP checks shapes, not values. `model.module(x)` in a training step is enough: the forward
bypasses DDP, so backward() never all-reduces the gradients (seen on torch 2.13 with gloo: the
ranks' weights differ after the first step, silently).

## Example
```python
# torchrun --nproc-per-node 2
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

dist.init_process_group("gloo")
torch.manual_seed(0)
model = nn.parallel.DistributedDataParallel(nn.Linear(16, 4))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(32, 16) + dist.get_rank(), torch.randint(0, 4, (32,))
for step in range(5):
    optimizer.zero_grad()
    F.cross_entropy(model.module(x), y).backward()
    optimizer.step()
dist.destroy_process_group()
```

Use instead:
```python
# torchrun --nproc-per-node 2
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

dist.init_process_group("gloo")
torch.manual_seed(0)
model = nn.parallel.DistributedDataParallel(nn.Linear(16, 4))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(32, 16) + dist.get_rank(), torch.randint(0, 4, (32,))
for step in range(5):
    optimizer.zero_grad()
    F.cross_entropy(model(x), y).backward()
    optimizer.step()
dist.destroy_process_group()
```

## References
- [DistributedDataParallel](https://pytorch.org/docs/stable/generated/torch.nn.parallel.DistributedDataParallel.html): gradients are averaged by hooks that the wrapper's own `forward` prepares.
""",
)
