"""TD175 checkpoint-without-use-reentrant."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD175",
    name="checkpoint-without-use-reentrant",
    category=Category.GRAD_FLOW,
    severity=Severity.WARNING,
    unsafe_fix=True,
    proof="lint",
    message="`{call}` without `use_reentrant` runs the reentrant variant (and warns on every call): a checkpointed "
            "block whose inputs do not require grad gives its parameters no gradient",
    hint="Pass `use_reentrant=False`, the variant torch recommends; pass `use_reentrant=True` only to keep the "
         "reentrant behaviour on purpose.",
    sees={
        "lint": "`torch.utils.checkpoint.checkpoint(block, x)` without `use_reentrant`: the reentrant variant, which gives a block whose inputs need no grad no parameter gradients",
    },
    doc="""
## What it does
Flags `torch.utils.checkpoint.checkpoint(...)` and `checkpoint_sequential(...)` called
without `use_reentrant`, unless the function first tests whether its inputs require grad
(`if self.with_cp and x.requires_grad:`), which handles the case the reentrant variant
gets wrong.

## Why is this bad?
Without the argument, torch 2.13 still runs the *reentrant* implementation, and prints on
every call: "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly.
Starting in PyTorch 2.9, calling checkpoint without use_reentrant will raise an exception."
(Verified on torch 2.13: no exception is raised; the warning and the reentrant default
remain.) The reentrant variant only backpropagates into the block when one of the tensors
passed to `checkpoint` requires grad. When none does (the first checkpointed block fed by
frozen embeddings or by the raw input, a LoRA model over a frozen base), backward() still
succeeds through the rest of the model, but the block's parameters get no gradient at all:
`.grad` stays `None` and they never train; the only sign is a second warning, "None of the
inputs have requires_grad=True. Gradients will be None". `use_reentrant=False` differentiates
through the block's parameters whatever its inputs are.

## Example
```python
from torch.utils.checkpoint import checkpoint

def run(block, head, x):
    return head(checkpoint(block, x))
```

Use instead:
```python
from torch.utils.checkpoint import checkpoint

def run(block, head, x):
    return head(checkpoint(block, x, use_reentrant=False))
```

## Fix safety
The fix adds `use_reentrant=False`. It is offered as unsafe: the non-reentrant variant also
differs in what it supports (it allows keyword arguments and `torch.autograd.grad`, and
checks that the recomputation matches), so read the torch.utils.checkpoint documentation if
the block relies on reentrant behaviour.
""",
)
