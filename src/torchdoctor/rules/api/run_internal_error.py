"""TD006 run-internal-error."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD006",
    name="run-internal-error",
    category=Category.API,
    severity=Severity.WARNING,
    proof="run",
    message="torchdoctor failed inside {where} ({error}); it stepped aside and your script ran on without it, so findings it would have made may be missing",
    hint="This is a bug in torchdoctor, not in your code: set TORCHDOCTOR_DEBUG=1 to see the internal traceback, and please report it.",
    variants={
        "script-stopped": Variant(
            message="the script stopped with {error}, raised inside torchdoctor's own code ({where}), not by a line of "
            "yours: under plain python it would not have",
        ),
    },
    doc="""
## What it does
Reports that one of torchdoctor's own observers (a hook, a stand-in or a detector it runs
inside your program under `torchdoctor run` or `torchdoctor.watch()`) raised an exception.
The exception never reaches your program: that observer steps aside for the rest of the
run and the call it was watching goes on as without torchdoctor. If your script crashed
and the exception was raised by torchdoctor's own code, the crash is reported here
instead of being blamed on a line of yours. The finding has no line: none of yours is
involved. With `TORCHDOCTOR_DEBUG=1` the internal traceback is printed when it happens
and kept in the finding's evidence.

## Why is this bad?
The report is incomplete: what the failed observer would have found is missing. `run`
exits with status 2 (an internal error) so that the gap is not mistaken for a clean
result; `--ignore TD006` gives the script's own status back.

## Example
```python
import torch
from torch import nn
from torchdoctor.observe.session import Session


def broken_observer(event):  # stands for a bug in torchdoctor's module observer
    raise RuntimeError("bug in torchdoctor")


Session.current().modules.on_call = broken_observer
model = nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(5):
    optimizer.zero_grad()
    model(torch.randn(8, 4)).pow(2).mean().backward()
    optimizer.step()
```

Use instead:
```python
import torch
from torch import nn

model = nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(5):
    optimizer.zero_grad()
    model(torch.randn(8, 4)).pow(2).mean().backward()
    optimizer.step()
```
""",
)
