"""TD152 method-not-called."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD152",
    name="method-not-called",
    category=Category.API,
    severity=Severity.ERROR,
    proof="lint",
    fixable=True,
    message="`{target}` is named but not called: the statement does nothing",
    hint="Add the parentheses: `{target}()`.",
    variants={
        # the crash "'method' object is not iterable" of an optimizer given `model.parameters`
        "optimizer-method": Variant(message="`{target}` is passed to `{optimizer}` without being called: the optimizer gets the method, not the parameters"),
        # the crash of an optimizer given the module itself ("'Linear' object is not iterable")
        "optimizer-module": Variant(
            message="`{target}` is passed to `{optimizer}` itself: an optimizer takes the module's parameters, not the module",
            hint="Pass its parameters: `{target}.parameters()`.",
        ),
    },
    sees={
        "lint": "`model.eval`, `optimizer.zero_grad` without parentheses",
        "run": "the crash of an optimizer given `model.parameters` without parentheses (\"'method' object is not iterable\") or the module itself (\"'Linear' object is not iterable\"), at the optimizer's line",
    },
    doc="""
## What it does
Flags a statement that only names a method that acts by being called: `model.eval`,
`model.train`, `optimizer.zero_grad`, `optimizer.step`, `loss.backward`, `scaler.update`,
`sampler.set_epoch`, `tensor.requires_grad_`, ...

`torchdoctor run` also explains the crash of an optimizer given `model.parameters` without
the parentheses ("'method' object is not iterable"), or given the model itself.

## Why is this bad?
Without the parentheses Python evaluates the bound method and throws it away: the model stays
in training mode, the gradients are not reset, the step is not taken. Nothing fails and the
line looks right at a glance.

## Example
```python
def evaluate(model, loader):
    model.eval
    return sum(model(x).sum().item() for x, _ in loader)
```

Use instead:
```python
def evaluate(model, loader):
    model.eval()
    return sum(model(x).sum().item() for x, _ in loader)
```

## Fix safety
The fix adds the missing `()`, so the line now does what it says. That changes what the
program does (that is the point), which is why you should re-run your training afterwards.
""",
)
