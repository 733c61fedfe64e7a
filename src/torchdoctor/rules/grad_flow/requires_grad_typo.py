"""TD168 requires-grad-typo."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD168",
    name="requires-grad-typo",
    category=Category.GRAD_FLOW,
    severity=Severity.ERROR,
    proof="lint",
    fixable=True,
    message="`{target}.{attribute} = ...` sets a new, meaningless attribute: `requires_grad` is unchanged",
    hint="Spell it `requires_grad` (or call `{target}.requires_grad_(False)`).",
    sees={
        "lint": "`p.require_grad = False`, `p.requires_grad_ = False`",
    },
    doc="""
## What it does
Flags an assignment to a misspelling of `requires_grad` (`require_grad`, `requires_grads`,
`required_grad`, ...) and to `requires_grad_` (the in-place *method*).

## Why is this bad?
Python objects accept any new attribute, so the assignment succeeds and does nothing: the
layers you meant to freeze keep training (or the ones you meant to train stay frozen).
Assigning to `requires_grad_` even replaces the method on that tensor. Verified on torch 2.13:
after `p.requires_grad_ = False`, `p.requires_grad` is still `True`.

## Example
```python
def freeze(backbone):
    for p in backbone.parameters():
        p.require_grad = False
```

Use instead:
```python
def freeze(backbone):
    for p in backbone.parameters():
        p.requires_grad = False
```

## Fix safety
The fix renames the attribute to `requires_grad`, which is what the line meant; it changes
which parameters train, so re-check the optimizer's parameter list afterwards.
""",
)
