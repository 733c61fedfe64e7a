"""TD711 same-rng-state-across-ranks."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD711",
    name="same-rng-state-across-ranks",
    category=Category.DISTRIBUTED,
    severity=Severity.WARNING,
    proof="dist",
    message='all {count_ranks} ranks have the same torch random state: dropout masks, augmentations and random sampling are identical on every rank',
    hint="Seed each rank differently for everything that should differ (`torch.manual_seed(seed + rank)`, and the same for NumPy and `random`); keep the model's initial weights identical by broadcasting them (DDP does) instead of by seeding.",
    doc="""
## What it does
Compares a fingerprint of each rank's default torch generator state. In `torchdoctor dist`'s own
processes they always differ; the check is meant for the state a training script has set, which
`torchdoctor run` passes to it.

## Why is this bad?
`seed_everything(42)` on every rank makes every rank draw the same random numbers: the same
augmentation of different images, the same dropout masks, the same random crops. The effective
diversity of a step shrinks with the number of ranks, and nothing reports it.

## Example
```json
{"mode": "launcher", "world_size": 2,
 "ranks": [{"rank": 0, "arrived": true, "rng": "5f1c2a9e0b7d4c31"},
           {"rank": 1, "arrived": true, "rng": "5f1c2a9e0b7d4c31"}]}
```

Use instead:
```json
{"mode": "launcher", "world_size": 2,
 "ranks": [{"rank": 0, "arrived": true, "rng": "5f1c2a9e0b7d4c31"},
           {"rank": 1, "arrived": true, "rng": "a04e77c93d1f8b26"}]}
```
""",
)
