"""TD116: frozen parameters (`requires_grad=False`) that an optimizer step still changes.

An optimizer skips parameters whose `.grad` is None, not frozen ones: a parameter frozen after
it had a gradient keeps a (zero) `.grad` tensor when `zero_grad(set_to_none=False)` is used,
and weight decay or momentum go on moving it. On a sparse schedule of steps (`support.due`),
the optimizer's frozen parameters that still hold a gradient are sampled before the step and
compared after it; correct programs have none, so nothing is copied for them.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

import torch
from torch.optim.optimizer import Optimizer

from torchdoctor.observe.detector import Detector
from torchdoctor.observe.events import Step
from torchdoctor.observe.instruments.optim import params_of
from torchdoctor.observe.support import due, listing, param_sample
from torchdoctor.rules.optimizer.frozen_parameter_updated import RULE as FROZEN_UPDATED
from torchdoctor.rules.optimizer.frozen_parameter_updated import reasons_variant

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Observed

#: parameters sampled per step
MAX_PARAMS = 32


class FrozenUpdates(Detector):
    """TD116: a frozen parameter that still has a `.grad` is changed by `optimizer.step()`."""

    ORDER = 340
    rules = (FROZEN_UPDATED,)

    def __init__(self, ctx: Observed) -> None:
        super().__init__(ctx)
        self._before: dict[int, list[tuple[weakref.ref[torch.Tensor], torch.Tensor]]] = {}
        self._reported: weakref.WeakSet[Optimizer] = weakref.WeakSet()

    def on_step(self, event: Step) -> None:
        optimizer = event.optimizer
        if optimizer in self._reported or not due(event.index):
            return
        suspects = [p for p in params_of(optimizer) if not p.requires_grad and p.grad is not None][:MAX_PARAMS]
        if suspects:
            with torch.no_grad():
                self._before[id(optimizer)] = [(weakref.ref(p), param_sample(p).clone()) for p in suspects]

    def on_step_end(self, event: Step) -> None:
        before = self._before.pop(id(event.optimizer), None)
        if not before:
            return
        with torch.no_grad():
            moved = [p for ref, old in before if (p := ref()) is not None and not torch.equal(param_sample(p), old)]
        if moved:
            self._reported.add(event.optimizer)
            self._report(event.optimizer, moved)

    def _report(self, optimizer: Optimizer, moved: list[torch.Tensor]) -> None:
        names = [self.ctx.modules.param_name(p) or f"#{i}" for i, p in enumerate(moved)]
        group = next((g for g in optimizer.param_groups if any(q is moved[0] for q in g["params"])), {})
        decay = group.get("weight_decay", 0)
        reasons = ["stale-grad", *(["weight-decay"] if decay else []), *(["momentum"] if optimizer.state.get(moved[0]) else [])]
        name = f"`{names[0]}`" if len(names) == 1 else f"`{names[0]}` (and {len(names) - 1} more: {listing(names[1:])})"
        at = self.ctx.optimizers.info(optimizer).created_at or True
        self.ctx.report(
            FROZEN_UPDATED, at=at, key=id(optimizer), variant=reasons_variant(reasons),
            fields={"name": name, **({"decay": decay} if decay else {})},
            evidence={"parameters": names},
        )

