"""TD441 deleted-but-still-alive."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD441",
    name="deleted-but-still-alive",
    category=Category.MEMORY,
    severity=Severity.WARNING,
    proof="run",
    message="`del {name}` does not give its {size} back: something the program keeps but torchdoctor cannot name (a "
    "library's or a C extension's object) still holds it",
    hint="`del` removes a name, not the memory: the storage is freed when its last reference goes. Remove that reference too, or keep a copy (`.clone()`) of the part you need.",
    variants={
        # by what still holds the deleted tensor's storage (observe/detectors/memory_deleted.py): a small view under another name
        "other-view": Variant(message="`del {name}` does not give its {size} back: `{other}` is a view of {other_size} of it "
                              "and keeps the whole storage alive",
                              hint="Keep a copy of the part you need (`{other} = ....clone()`), or delete `{other}` too."),
        # another name for (most of) the same storage
        "other-name": Variant(message="`del {name}` does not give its {size} back: `{other}` still holds it",
                              hint="Keep a copy of the part you need (`{other} = ....clone()`), or delete `{other}` too."),
        # an autograd graph that saved it ({holder}: the census's label, "saved for backward by the graph of `loss`")
        "saved-for-backward": Variant(message="`del {name}` does not give its {size} back: it is {holder}, which is still "
                                      "alive after the step",
                                      hint="Let backward() free the graph (no `retain_graph=True`), drop the tensors that "
                                      "keep it (a loss kept for logging: store `.item()`), or compute what does not need "
                                      "gradients under `torch.no_grad()`."),
        # a named container or attribute ({holder}: the census's label, "`history[3]`")
        "named-holder": Variant(message="`del {name}` does not give its {size} back: {holder} still holds it"),
        # a view keeps the storage of a tensor deleted with `del` alive (run)
        "view-of-deleted": Variant(message="`{name}` is a view of {size} that keeps the whole {storage} storage of `{base}` alive: `del {base}` at line {deleted_line} did not give that memory back", hint="Keep a copy of the part you need, `{name} = {source}.clone()`, so the rest of `{base}` is freed."),
        # the same, for a tensor that went out of scope
        "view-out-of-scope": Variant(message="`{name}` is a view of {size} that keeps the whole {storage} storage of `{base}` alive: `{base}` going out of scope did not give that memory back", hint="Keep a copy of the part you need, `{name} = {source}.clone()`, so the rest of `{base}` is freed."),
    },
    sees={
        "run": "\"I deleted it but memory did not come back\": a `del`eted name whose storage outlives the step, or a small view (`first = features[:8]`) that keeps a deleted base alive, with what still holds it; reported at the `del` / the view's line",
    },
    doc="""
## What it does
Notices, during the first steps and at each census, large tensors (1 MiB or more) that the
user's code `del`etes, and reports one whose storage is still alive at the end of the step,
with what still references it: another view of the same storage, a container, the saved
tensors of an autograd graph that is still alive. It also reports a small view, kept under a
name, that keeps a much larger storage alive after the tensor it was sliced from was deleted
or went out of scope (`first = features[:8]`).

## Why is this bad?
`del x` only removes the name `x`. The memory comes back when the last reference to the storage
goes: a view (`x[:8]`, `x.view(...)`, `x.t()`) shares the whole storage; a list or dict entry is a
reference; a graph that saved `x` for backward keeps it until backward() runs or the graph is
freed. The process keeps the memory and nothing says why.

## Example
```python
import torch
from torch import nn

model = nn.Linear(1024, 10)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(10):
    features = torch.randn(512, 1024)  # 2 MiB
    first = features[:8]
    del features  # meant to free the 2 MiB
    optimizer.zero_grad()
    model(first).pow(2).mean().backward()
    optimizer.step()
```

Use instead:
```python
import torch
from torch import nn

model = nn.Linear(1024, 10)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(10):
    features = torch.randn(512, 1024)  # 2 MiB
    first = features[:8].clone()
    del features  # frees the 2 MiB
    optimizer.zero_grad()
    model(first).pow(2).mean().backward()
    optimizer.step()
```
""",
)
