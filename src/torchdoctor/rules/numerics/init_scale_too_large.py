"""TD177 init-scale-too-large."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD177",
    name="init-scale-too-large",
    category=Category.NUMERICS,
    severity=Severity.WARNING,
    proof="lint",
    message="`{tensor}` is initialised with a standard deviation of {std:.3g} ({how}): layers are initialised at about 1/sqrt(inputs) (0.02 in GPT-style models), so activations and logits saturate and the first steps blow up",
    hint="Check the scale (a factor or a typo): `std=0.02`, or `nn.init.kaiming_normal_` / `xavier_uniform_`, which compute it from the layer's size.",
    sees={
        "lint": "`nn.init.normal_` / `trunc_normal_` / `uniform_` (or the tensor methods) on a layer's `weight` with a spread the source fixes above a standard deviation of 2 (constants folded, names bound to constants followed; spreads computed from the layer and tensors that are not weights are fine)",
    },
    doc="""
## What it does
Flags `nn.init.normal_`, `nn.init.trunc_normal_` and `nn.init.uniform_` (and the tensor methods
`.normal_()` / `.uniform_()`) applied to a layer's `weight` with a spread the source fixes to more
than 2: a standard deviation above 2, or uniform bounds further apart than about ±3.5. Constants
are folded (`0.02 * 1000`), and so are names the function binds to constants (`initrange = 0.1`).

## Why is this bad?
A layer keeps its activations at a steady scale when its weights are about 1/sqrt(inputs): 0.04
for 512 inputs, 0.02 in GPT-style models. Weights of standard deviation 20 multiply every
activation by hundreds per layer: softmaxes and sigmoids saturate, the first loss is enormous,
the first gradients explode, and training either diverges or sits in a corner it never leaves.
Nothing fails; a factor typed twice or a misplaced scale makes the difference.

## Example
```python
from torch import nn


def init_weights(module):
    if isinstance(module, nn.Linear):
        nn.init.normal_(module.weight, mean=0.0, std=0.02 * 1000)
        nn.init.zeros_(module.bias)
```

Use instead:
```python
from torch import nn


def init_weights(module):
    if isinstance(module, nn.Linear):
        nn.init.normal_(module.weight, mean=0.0, std=0.02)
        nn.init.zeros_(module.bias)
```
""",
)
