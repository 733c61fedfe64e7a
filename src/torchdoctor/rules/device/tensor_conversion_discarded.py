"""TD154 tensor-conversion-discarded."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD154",
    name="tensor-conversion-discarded",
    category=Category.DEVICE,
    severity=Severity.ERROR,
    proof="lint",
    fixable=True,
    message="`{call}` returns a new tensor that is thrown away: `{name}` itself is unchanged",
    hint="Keep the result: `{name} = {call}` (tensors, unlike modules, are not moved in place).",
    sees={
        "lint": "`x.to(device)`, `x.cuda()`, `y.long()` without keeping the result, on a batch tensor or a name bound only to torch factories (`torch.zeros`, `torch.LongTensor`, `Variable(...)`)",
    },
    doc="""
## What it does
Flags a statement that moves or converts a tensor (`x.to(device)`, `x.cuda()`, `y.long()`,
`x.float()`, ...) without assigning the result: a tensor drawn from a DataLoader, or a name
that every assignment of the function binds to a torch factory's result (`torch.zeros(...)`,
`torch.LongTensor(...)`, `Variable(...)`), so it cannot be a module.

## Why is this bad?
`Module.to()` moves the module in place, but `Tensor.to()` returns a *new* tensor and leaves
the original where it was. The batch stays on the CPU (or in its old dtype): on a GPU the
model fails with "Expected all tensors to be on the same device", and a dtype conversion
silently does nothing.

## Example
```python
def train(model, loader, loss_fn, optimizer, device):
    for x, y in loader:
        x.to(device)
        y.to(device)
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
```

Use instead:
```python
def train(model, loader, loss_fn, optimizer, device):
    for x, y in loader:
        x = x.to(device)
        y = y.to(device)
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
```

## Fix safety
The fix assigns the result back to the same name, which is what the line meant; tensors that
were already in place are unaffected.
""",
)
