"""Gradient clipping in the wrong place of the step.

TD112: `clip_grad_norm_` / `clip_grad_value_` runs when no backward() has produced this step's
gradients yet (after `zero_grad()` or the previous `step()`), and a backward() follows; right
after a `step()` the message says that the step already used the unclipped gradients.
TD113: clipping gradients a GradScaler has scaled (its loss was `scaler.scale(loss)`) before
`scaler.unscale_(optimizer)`.

Per clip call this is a comparison of sequence numbers; a user line is looked up only when
something is wrong.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from torchdoctor.core.locate import caller_in_user_code
from torchdoctor.observe.detector import Detector
from torchdoctor.observe.events import Backward, Location, Step, ZeroGrad
from torchdoctor.observe.instruments.clipping import Clip, GradientClipping, ScalerState
from torchdoctor.observe.instruments.optim import params_of
from torchdoctor.rules.optimizer.clip_grad_before_backward import RULE as CLIP_BEFORE_BACKWARD
from torchdoctor.rules.optimizer.clip_grad_on_scaled_gradients import RULE as CLIP_SCALED

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Observed


class Clipping(Detector):
    """TD112 (clip before backward) and TD113 (clip on scaled gradients)."""

    ORDER = 330
    rules = (CLIP_BEFORE_BACKWARD, CLIP_SCALED)

    def __init__(self, ctx: Observed) -> None:
        super().__init__(ctx)
        self._scaler: ScalerState | None = None
        self._last_step_seq = 0
        self._last_zero_seq = 0
        self._scaled_since_step = False
        self._scaled_backward = False
        #: clips made with no gradients of this step yet, waiting for a backward() to confirm,
        #: each with whether it came right after a step (no zero_grad() or backward() since)
        self._early: list[tuple[Location | None, bool]] = []

    def install(self) -> None:
        clipping = self.ctx.instrument(GradientClipping)
        clipping.listen(self._clipped)
        self._scaler = clipping.scaler

    def on_zero_grad(self, event: ZeroGrad) -> None:
        self._last_zero_seq = self.ctx.seq

    def on_backward(self, event: Backward) -> None:
        scaler = self._scaler
        self._scaled_backward = scaler is not None and bool(scaler.scaled) and any(scaler.is_scaled(t) for t in event.tensors)

    def on_backward_end(self, event: Backward) -> None:
        if self._scaled_backward:
            self._scaled_since_step = True
        early, self._early = self._early, []
        for location, after_step in early:
            if after_step:
                self.ctx.report(CLIP_BEFORE_BACKWARD, at=location, key="after-step",
                                variant="after-step", fields={"step": "the optimizer step"})
            else:
                self.ctx.report(CLIP_BEFORE_BACKWARD, at=location, key="early")

    def on_step_end(self, event: Step) -> None:
        self._last_step_seq = self.ctx.seq
        self._scaled_since_step = False
        self._early = []

    def _clipped(self, clip: Clip) -> None:
        if _unbounded(clip.limit):
            return  # `clip_grad_norm_(params, inf)` measures the norm and changes nothing
        if self.ctx.backward.completed == 0 or max(self._last_step_seq, self._last_zero_seq) > self.ctx.last_backward_seq:
            after_step = self._last_step_seq > max(self._last_zero_seq, self.ctx.last_backward_seq)
            self._early.append((caller_in_user_code(), after_step))
            return
        if self._scaled_since_step and self._still_scaled(clip):
            self.ctx.report(CLIP_SCALED, key="scaled", evidence={"function": clip.function})

    def _still_scaled(self, clip: Clip) -> bool:
        """No `scaler.unscale_(optimizer)` since the scaled backward for an optimizer that
        holds the clipped parameters (or for any optimizer, when none is known to)."""
        unscaled = self._scaler.unscaled if self._scaler is not None else set()
        clipped = {id(p) for p in clip.parameters}
        holders = [opt for opt in list(self.ctx.optimizers.known.keys()) if any(id(p) in clipped for p in params_of(opt))]
        if not holders:
            return not unscaled
        return any(id(opt) not in unscaled for opt in holders)


def _unbounded(limit: Any) -> bool:
    try:
        return math.isinf(float(limit))
    except (TypeError, ValueError, RuntimeError):
        return False
