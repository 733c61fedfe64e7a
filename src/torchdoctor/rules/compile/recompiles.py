"""TD481 compile-recompiles.

Each failed guard is one kind of cause with its own words and fix (`CAUSES`); a function
recompiled for several kinds gets them all, numbered in the message and in the hint alike.
"""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

#: a cause's kind -> (what changed, in words; the fix). Fields: `subject` (the value dynamo
#: guards on, as dynamo names it: `x`, `self.calls`), `values` (the values seen, in order)
CAUSES: dict[str, tuple[str, str]] = {
    "size": ("`{subject}`'s size changes between calls ({values})",
             "compile with `dynamic=True`, or mark the changing dimension with `torch._dynamo.mark_dynamic({subject}, dim)` "
             "before the call; for a short last batch, `drop_last=True` on the DataLoader"),
    "stride": ("`{subject}`'s memory layout (strides) changes between calls ({values})",
               "pass it with the same layout every call (`.contiguous()` before the call)"),
    "rank": ("`{subject}` has a different number of dimensions between calls ({values})",
             "give it the same number of dimensions every call (reshape or `unsqueeze` before the call)"),
    "dtype": ("`{subject}`'s dtype changes between calls ({values})",
              "cast it to one dtype before the call (e.g. `.float()`)"),
    "device": ("`{subject}` comes on a different device between calls ({values})",
               "move it to one device before the call"),
    "requires_grad": ("`{subject}`'s requires_grad changes between calls ({values})",
                      "give the compiled code inputs with the same requires_grad every call (`.detach()` the ones that need no gradient)"),
    "global_state": ("it is called under a different global setting ({values})",
                     "call it under one grad mode and autocast setting: each setting seen is compiled once more "
                     "(evaluate eagerly: the module you passed to `torch.compile`, not the compiled wrapper)"),
    "training": ("the model switches between train() and eval() between calls",
                 "each mode is compiled once more: evaluate eagerly (the module you passed to `torch.compile`, "
                 "not the compiled wrapper), or keep one mode"),
    "attribute": ("the attribute `{subject}` is different on each call ({values})",
                  "dynamo compiles every new value of `{subject}`: stop changing it between calls (count outside the compiled code), or keep it a tensor "
                  "(`self.register_buffer(...)`, updated in place); `torch._dynamo.config.allow_unspec_int_on_nn_module = True` "
                  "makes a module's integer attributes dynamic"),
    "number": ("the Python number `{subject}` is different on each call ({values})",
               "dynamo compiles every new value of `{subject}`: pass it to the compiled code as a tensor argument "
               "(`torch.tensor(value)`), whose value dynamo does not guard on"),
    "value": ("the Python value `{subject}` is different on each call ({values})",
              "dynamo compiles every new value of `{subject}`: keep it the same across calls, or move it out of the compiled function; pass a changing number as a tensor"),
    "other": ("a guard fails ({values})",
              "run with `TORCH_LOGS=recompiles` to see each failed guard, and keep what it checks the same across calls"),
}
#: where a cause's value changes: the assignment found in the source, else the call that
#: recompiled, else the line of the compiled code that reads it (dynamo's record of the guard)
CHANGED_AT = "changed at {place}"
CALLED_AT = "at the call at {place}"
READ_AT = "read at {place}"
#: how many of the recompilations a cause made, when there are several causes
CAUSE_COUNT = "{count} of the {total} recompilations"
#: the `why` of a function recompiled for several causes, each numbered as its fix in the hint
SEVERAL_CAUSES = "{number} causes: {causes}"
#: the `limit` of a function that reached dynamo's recompile limit
LIMIT = "; it reached dynamo's recompile limit and now runs without compilation"

RULE = Rule(
    code="TD481",
    name="compile-recompiles",
    category=Category.COMPILE,
    severity=Severity.WARNING,
    proof="run",
    message="torch.compile compiled `{function}` {count} times: {why}{limit}",
    hint="{remedy}",
    sees={
        "run": "a function compiled again and again: each kind of failed guard in plain words with its own fix and its share of the recompilations (a changing size, strides, number of dimensions, dtype or device; `requires_grad` flipping; grad mode or autocast switched around the call; train()/eval(); a module attribute such as `self.calls += 1` in `forward`; a Python number or value different every call), at the line that changes the value (the assignment to the attribute or global, else the call that recompiled), and the recompile limit after which it runs without compilation",
    },
    doc="""
## What it does
Reports a compiled function (or a compiled model's `forward`) that dynamo compiled again and
again because a guard failed, with the guard in plain words: a shape that changes between
calls, a Python number or string that is different every call, a module attribute that
`forward` changes (`self.calls += 1`), an input whose `requires_grad` or dtype flips, grad
mode or autocast switched around the call. When the recompilations have several causes, each
is named with its own fix, its share of the recompilations and the line where its value
changes (an assignment to the attribute or global, else the call that recompiled). One
recompilation after the first call is normal (dynamo then marks a changing shape dynamic by
itself) and is not reported; two or more of the same function are, and so is reaching
dynamo's recompile limit, after which the function silently runs without compilation.

## Why is this bad?
Every recompilation costs seconds to minutes, and once the limit (8 by default) is reached
the function falls back to eager mode for the rest of the run: the speed-up is gone and
nothing but a log line says so.

## Example
```python
import torch


@torch.compile
def scale(x, mode):
    return x * len(mode)


for step in range(10):
    scale(torch.randn(4), "warmup" + "!" * step)  # a different string every call
```

Use instead:
```python
import torch


@torch.compile
def scale(x, factor):
    return x * factor


for step in range(10):
    scale(torch.randn(4), torch.tensor(float(6 + step)))  # a tensor: no recompilation
```
""",
)
