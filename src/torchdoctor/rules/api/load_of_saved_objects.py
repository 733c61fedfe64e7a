"""TD174 load-of-saved-objects."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD174",
    name="load-of-saved-objects",
    category=Category.API,
    severity=Severity.ERROR,
    proof="lint",
    message="`torch.load` reads the checkpoint that line {save_line} saves with {what} in it: with weights_only=True "
            "(the default since torch 2.6) it fails with \"UnpicklingError: Weights only load failed\"",
    hint="Save plain data instead ({instead}); or, for a file you trust, load it with `torch.load(..., weights_only=False)`.",
    sees={
        "lint": "`torch.load` (weights_only=True by default) of a checkpoint the same file saves with `'args': args`, a whole model or a NumPy value: UnpicklingError",
    },
    doc="""
## What it does
Flags a `torch.load(...)` without `weights_only=False` in a file that saves, with `torch.save`
(or a helper named like `save_on_master`, `save_checkpoint`), a checkpoint holding objects
the safe loader refuses: an `argparse.Namespace` (`'args': args`, where `args` comes from
`parse_args()` or is an `args` parameter whose attributes the function reads), a whole model
or optimizer object, a NumPy value. A load is matched to the save when it reads one of the
saved keys (`checkpoint["model"]`), or, for a whole object, when it loads into a variable of
the same name.

## Why is this bad?
Since torch 2.6 `torch.load` defaults to `weights_only=True`, which unpickles only tensors,
numbers, strings and plain containers. Resuming from such a checkpoint fails (verified on
torch 2.13):

```text
_pickle.UnpicklingError: Weights only load failed. This file can still be loaded, to do so
you have two options, do those steps only if you trust the source of the checkpoint.
	(1) In PyTorch 2.6, we changed the default value of the `weights_only` argument in
	`torch.load` from `False` to `True`. [...]
	WeightsUnpickler error: Unsupported global: GLOBAL argparse.Namespace was not an allowed
	global by default. [...]
```

The training run saves its checkpoints fine for days; the failure comes when it is resumed,
evaluated or fine-tuned. (`torchdoctor run` explains the crash itself as TD421.)

## Example
```python
import torch

def save(model, optimizer, args, epoch):
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                "epoch": epoch, "args": args}, f"{args.output_dir}/checkpoint.pth")

def resume(model, optimizer, path):
    checkpoint = torch.load(path, map_location="cpu")
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    return checkpoint["epoch"]
```

Use instead:
```python
import torch

def save(model, optimizer, args, epoch):
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                "epoch": epoch, "args": vars(args)}, f"{args.output_dir}/checkpoint.pth")

def resume(model, optimizer, path):
    checkpoint = torch.load(path, map_location="cpu")
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    return checkpoint["epoch"]
```
""",
)
