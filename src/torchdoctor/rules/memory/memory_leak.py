"""TD440 memory-leak."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

#: what the holder holds, by the kind of leak observe/detectors/memory_leaks.py measured (after "{holder} holds")
HOLDS = {
    "views": "{views} small views ({data} of data) that keep their whole base storages alive: {view_bytes}, "
    "+{views_per_step} per step",
    "tracebacks": "{exceptions} exceptions whose tracebacks keep the frames they went through alive, with their tensors "
    "({variables}): {total}, +{per_step} per step",
    "tracebacks-unnamed": "{exceptions} exceptions whose tracebacks keep the frames they went through alive, with their "
    "tensors (their variables): {total}, +{per_step} per step",
    "chain": "its autograd graph back to the first step, with {graph_bytes} of activations saved for backward, "
    "+{per_step} per step",
    "graphs-saved": "{tensors} tensors with their autograd graphs: {total}, including {graph_bytes} of activations saved "
    "for a backward() that never comes, +{per_step} per step",
    "graphs": "{tensors} tensors that each keep their step's autograd graph alive ({bytes} of tensors and the graphs' "
    "nodes), {rate} more per step",
}
#: the same numbers, added to the message of TD147 or TD148 when that rule already names the leak
MEASURED = {kind: " (measured: {holder} holds " + holds + ")" for kind, holds in HOLDS.items()}
_GRAPHS_HINT = ("Store numbers (`.item()`) or detached tensors (`.detach()`) in `{name}`; compute what you keep for "
                "logging or plots under `torch.no_grad()`.")
_HINTS = {
    "views": "Store a copy instead of a view: `.clone()` (or `.detach().clone()`) what you put in `{name}`, so each entry "
    "keeps only its own bytes, not the whole tensor it was sliced from.",
    "tracebacks": "Keep what you need of an exception (`str(error)`, its type) in `{name}`, not the exception: its "
    "`__traceback__` keeps every variable of every frame it passed through.",
    "chain": "`.detach()` `{name}` when you carry it into the next step (and drop `retain_graph=True`).",
}

RULE = Rule(
    code="TD440",
    name="memory-leak",
    category=Category.MEMORY,
    severity=Severity.WARNING,
    proof="run",
    message="memory grows at every step: {holder} holds {what}",
    hint="Keep numbers (`.item()`) or detached copies (`.detach()`, `.clone()`) of what you store across steps, and bound what you cache.",
    variants={kind: Variant(message="memory grows at every step: {holder} holds " + holds,
                            hint=_HINTS.get(kind.removesuffix("-unnamed"), _GRAPHS_HINT))
              for kind, holds in HOLDS.items()},
    sees={
        "run": "memory that grows step after step, with its holder named: tensors kept with their autograd graph (a list or dict filled each step, a module attribute appended in `forward`, a hook's closure), small views that keep whole storages alive, exceptions whose tracebacks keep frames and their tensors, a tensor carried across steps with its history; growth of detached tensors (a replay buffer, collected predictions, a bounded cache) and the allocator warming up are not leaks. When TD147 or TD148 already names the bug, the measured numbers are added to that finding instead; reported at the line that fills the holder",
    },
    doc="""
## What it does
Follows the tensors the user's code keeps between optimizer steps (in the running functions'
variables, the globals of the user's modules, the models' attributes and hooks, and whatever
those reach: lists, dicts, objects, closures, exceptions) and reports a holder whose tensors
grow step after step when what it keeps is a leak: tensors that carry their autograd graph,
small views that keep much larger storages alive, exceptions whose tracebacks keep frames and
their tensors alive, or a tensor carried from step to step with its history. It names the
holder as the code does (`history`, `model.attention.maps`, the closure of a hook), where it is
created and filled, how much it holds and how much it grows per step.

Growth alone is not a leak: a replay buffer of detached tensors, a cache with a bound, or the
allocator warming up in the first epoch grow too, and are not reported.

## Why is this bad?
Memory that grows with every step ends in an out-of-memory error, hours into training, on a
line that has nothing to do with the cause. A tensor kept with its graph keeps the graph's
nodes and often the activations it saved; `x[:1]` keeps all of `x`; an exception keeps every
variable of every frame its traceback went through.

## Example
```python
import torch
from torch import nn

model = nn.Sequential(nn.Linear(32, 256), nn.ReLU(), nn.Linear(256, 4))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
embeddings = {}
for step in range(40):
    x, y = torch.randn(64, 32), torch.randint(0, 4, (64,))
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    embeddings[step] = model[:2](x)  # kept for a plot
```

Use instead:
```python
import torch
from torch import nn

model = nn.Sequential(nn.Linear(32, 256), nn.ReLU(), nn.Linear(256, 4))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
embeddings = {}
for step in range(40):
    x, y = torch.randn(64, 32), torch.randint(0, 4, (64,))
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    embeddings[step] = model[:2](x).detach()  # kept for a plot
```
""",
)
