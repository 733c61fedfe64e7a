"""TD153 grad-mode-call-without-with."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD153",
    name="grad-mode-call-without-with",
    category=Category.GRAD_MODE,
    severity=Severity.ERROR,
    proof="lint",
    message="`{call}` on its own line does nothing: it only takes effect as a `with` block",
    hint="Write `with {manager}:` and indent the code it should cover (or decorate the function with it).",
    sees={
        "lint": "`torch.no_grad()` as a statement (it does nothing)",
    },
    doc="""
## What it does
Flags `torch.no_grad()`, `torch.enable_grad()`, `torch.inference_mode()` and
`torch.autocast(...)` called as a statement of their own instead of being used in a `with`.

## Why is this bad?
These are context managers: creating one changes nothing until it is entered. The code after
the call still records the autograd graph (or still runs in full precision), so evaluation
uses several times the memory it should, and nothing warns you. (`torch.set_grad_enabled(False)`
is different: called as a function it does switch gradients off, so it is not flagged.)

## Example
```python
import torch

def evaluate(model, loader):
    model.eval()
    torch.no_grad()
    return [model(x).argmax(1) for x, _ in loader]
```

Use instead:
```python
import torch

def evaluate(model, loader):
    model.eval()
    with torch.no_grad():
        return [model(x).argmax(1) for x, _ in loader]
```
""",
)
