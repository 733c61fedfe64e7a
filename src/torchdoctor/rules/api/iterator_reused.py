"""TD180 iterator-reused."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD180",
    name="iterator-reused",
    category=Category.API,
    severity=Severity.ERROR,
    proof="lint",
    fixable=True,
    message="`{name}` is a one-shot iterator (`{source}`): {first} uses it up, and {here} sees nothing",
    hint="Keep a list where it is made: `{name} = list({source})`.",
    variants={
        # the crash "optimizer got an empty parameter list": the optimizer was the second consumer
        "optimizer-empty": Variant(message="`{name}` is a one-shot iterator (`{source}`): {first} uses it up, so `{optimizer}` got an empty parameter list{crashed}"),
    },
    sees={
        "lint": "a name bound once to a one-shot iterator (`model.parameters()`, `itertools.chain(...)`, `filter(...)`, a generator expression) and consumed twice: handed to an optimizer and then looped over or given to `clip_grad_norm_`, or consumed in every pass of a loop (a list, an iterator made afresh in each pass, uses in the two branches of one `if`, and one returned or stored elsewhere are left alone)",
        "run": "the crash \"optimizer got an empty parameter list\" when the optimizer was given a name bound to `model.parameters()` (or another one-shot iterator over a model's parameters) that an earlier line used up (at the line that makes the iterator)",
    },
    doc="""
## What it does
Flags a name bound to a one-shot iterator (`model.parameters()`, `named_parameters()`,
`modules()`, `itertools.chain(...)`, a generator expression, `map`/`filter`) that is iterated
or handed to a call a second time: handed to an optimizer and then looped over to freeze the
parameters, or used by `clip_grad_norm_` in every iteration of the training loop.

## Why is this bad?
`Module.parameters()` returns a generator: the first consumer takes every parameter and every
later one gets none, without an error. The loop that freezes the Q-networks' parameters sets
nothing, `clip_grad_norm_(params, 1.0)` clips nothing after the first step (it returns a total
norm of 0), an optimizer built from it gets an empty parameter list. Verified on torch 2.13.

## Example
```python
import itertools

import torch


def build(actor, critic1, critic2):
    q_params = itertools.chain(critic1.parameters(), critic2.parameters())
    q_optimizer = torch.optim.Adam(q_params, lr=1e-3)
    for p in q_params:
        p.requires_grad = False
    return q_optimizer
```

Use instead:
```python
import itertools

import torch


def build(actor, critic1, critic2):
    q_params = list(itertools.chain(critic1.parameters(), critic2.parameters()))
    q_optimizer = torch.optim.Adam(q_params, lr=1e-3)
    for p in q_params:
        p.requires_grad = False
    return q_optimizer
```

## Fix safety
The fix wraps the iterator in `list(...)` where it is made, which is what every later use
expected; the list holds the same objects, in the same order.
""",
)
