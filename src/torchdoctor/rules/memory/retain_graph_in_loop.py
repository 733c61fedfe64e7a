"""TD148 retain-graph-in-loop."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD148",
    name="retain-graph-in-loop",
    category=Category.MEMORY,
    severity=Severity.WARNING,
    proof="lint",
    message="`backward(retain_graph=True)` in a training loop keeps every step's graph alive",
    hint="Drop `retain_graph=True`; if it was added to silence \"Trying to backward through the graph a second time\", `.detach()` the tensor carried across iterations (e.g. an RNN hidden state).",
    variants={
        "unused": Variant(
            message="`backward(retain_graph=True)` keeps each step's graph after backward(), but no later backward() uses "
            "it: its saved activations stay in memory until the next step replaces the loss",
            hint="Drop `retain_graph=True`: a graph that is backpropagated once does not need it.",
        ),
    },
    sees={
        "lint": "`backward(retain_graph=True)` in a loop with no second backward",
        "run": "`backward(retain_graph=True)` every step when no later backward uses the graph, or when each step's backward reaches further back into earlier steps; reported at the backward() line",
    },
    doc="""
## What it does
Flags `backward(retain_graph=True)` inside a training loop when no second backward through
the same graph follows in that iteration.

## Why is this bad?
`retain_graph=True` is usually added to silence "Trying to backward through the graph a second
time". That error means a tensor from an earlier iteration (a hidden state, a cached
embedding) is still attached to the graph. Retaining the graph makes it go away by keeping
every iteration's graph alive: memory and step time grow until the process runs out of memory.

## Example
```python
def train(model, loader, loss_fn, optimizer):
    hidden = None
    for x, y in loader:
        optimizer.zero_grad()
        out, hidden = model(x, hidden)
        loss = loss_fn(out, y)
        loss.backward(retain_graph=True)
        optimizer.step()
```

Use instead:
```python
def train(model, loader, loss_fn, optimizer):
    hidden = None
    for x, y in loader:
        optimizer.zero_grad()
        if hidden is not None:
            hidden = hidden.detach()
        out, hidden = model(x, hidden)
        loss = loss_fn(out, y)
        loss.backward()
        optimizer.step()
```
""",
)
