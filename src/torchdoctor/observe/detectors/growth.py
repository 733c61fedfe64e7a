"""Numbers going wrong before they are NaN: exploding gradients (TD490), weights that blow up
or collapse (TD491), GradScaler skipping many steps (TD492), a loss reduced in half
precision (TD493).

The gradient norms come from the one fused norm per step that the NaN check also uses
(instruments/grad_norms.py, CPU parameters); the weights' norm is measured on the steps
`due()` picks; the GradScaler's steps are counted by the clipping instrument.
"""

from __future__ import annotations

import math
import statistics
from collections import deque
from typing import TYPE_CHECKING

import torch

from torchdoctor.observe.detector import Detector
from torchdoctor.observe.events import Backward, Step
from torchdoctor.observe.instruments.clipping import GradientClipping
from torchdoctor.observe.instruments.grad_norms import GradNorms
from torchdoctor.observe.instruments.optim import params_of
from torchdoctor.observe.outcome import Outcome
from torchdoctor.observe.support import due
from torchdoctor.rules.numerics.grad_scaler_skipping import RULE as SCALER_SKIPS
from torchdoctor.rules.numerics.gradients_exploding import RULE as EXPLODING
from torchdoctor.rules.numerics.low_precision_loss import RULE as LOW_PRECISION
from torchdoctor.rules.numerics.weights_diverging import RULE as DIVERGING

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Observed

#: explosion: the norm this many times its median of `BASELINE` steps before ...
GROWTH = 1e3
#: ... (steps t-20 to t-10), rising at each of the last `RISING` steps
BASELINE = (20, 10)
RISING = 3
#: a parameter's own gradient grown this much marks where the explosion starts
PARAMETER_GROWTH = 1e2
#: weights: grown this much within the first `BLOW_UP_STEPS`, or shrunk below 1/`SHRINK`
#: within the first `COLLAPSE_STEPS`
BLOW_UP, BLOW_UP_STEPS = 100.0, 500
SHRINK, COLLAPSE_STEPS = 20.0, 200
#: skipped GradScaler steps reported: more than this many, and more than this share
SKIPS, SKIPPED_SHARE = 10, 0.1


class GradientGrowth(Detector):
    """TD490: the gradient norm climbing by orders of magnitude, and where it starts."""

    ORDER = 90
    rules = (EXPLODING,)

    def __init__(self, ctx: Observed) -> None:
        super().__init__(ctx)
        self._totals: dict[int, list[float]] = {}
        self._recent: dict[int, deque[torch.Tensor]] = {}
        self._done = False

    def on_step(self, event: Step) -> None:
        if self._done:
            return
        measured = self.ctx.instrument(GradNorms).at_step(event.optimizer, event.index)
        if measured is None:
            return
        params, norms = measured
        total = float(norms.norm())
        key = id(event.optimizer)
        totals = self._totals.setdefault(key, [])
        recent = self._recent.setdefault(key, deque(maxlen=BASELINE[0] + 1))
        totals.append(total)
        recent.append(norms)
        if not math.isfinite(total) or len(totals) <= BASELINE[0]:
            return
        baseline = statistics.median(totals[-BASELINE[0] - 1:-BASELINE[1] - 1])
        rising = all(a < b for a, b in zip(totals[-RISING - 1:-1], totals[-RISING:]))
        if baseline > 0 and total >= GROWTH * baseline and rising:
            self._done = True
            self.ctx.report(
                EXPLODING, key=key,
                fields={"before": baseline, "after": total, "ratio": total / baseline, "step": len(totals),
                        "window": f"{len(totals) - BASELINE[0]}-{len(totals) - BASELINE[1]}",
                        "since": len(totals) - RISING, "where": self._start(params, list(recent))},
                evidence={"norms": [round(t, 6) for t in totals[-BASELINE[0]:]]},
            )

    def _start(self, params: list[torch.Tensor], recent: list[torch.Tensor]) -> str:
        """The parameter whose own gradient norm grew a hundredfold first (the largest growth
        among those that did so at the same step)."""
        base = torch.stack(recent[: len(recent) // 2]).median(dim=0).values.clamp_min(1e-30)
        for norms in recent[len(recent) // 2:]:
            ratio = norms / base
            if bool((ratio >= PARAMETER_GROWTH).any()):
                index = int(ratio.nan_to_num(posinf=float("inf")).argmax())
                return f"`{self.ctx.modules.param_name(params[index]) or f'parameter {tuple(params[index].shape)}'}`"
        return "every layer at once"


class WeightDrift(Detector):
    """TD491: the weights' norm blowing up or collapsing in the first hundreds of steps."""

    ORDER = 100
    rules = (DIVERGING,)

    def __init__(self, ctx: Observed) -> None:
        super().__init__(ctx)
        self._first: dict[int, float] = {}
        self._reported: set[int] = set()

    def on_step(self, event: Step) -> None:
        key = id(event.optimizer)
        if key in self._reported or event.index > BLOW_UP_STEPS or not (event.index == 1 or due(event.index)):
            return
        params = [p for p in params_of(event.optimizer) if p.is_floating_point() and p.requires_grad]
        if not params or any(p.device.type != "cpu" for p in params):
            return
        norm = float(torch.stack(torch._foreach_norm([p.detach() for p in params])).norm())
        first = self._first.setdefault(key, norm)
        if not math.isfinite(norm) or first <= 1e-6 or event.index == 1:
            return
        ratio = norm / first
        if ratio >= BLOW_UP:
            how, remedy = "blow up", "Lower the learning rate, check the sign of the loss (it must be minimised), and clip the gradients."
        elif ratio <= 1 / SHRINK and event.index <= COLLAPSE_STEPS:
            how, remedy = "collapse towards zero", "Check the weight decay (typical values are 1e-4 to 0.1, and `lr * weight_decay` far below 1) and that gradients reach these weights."
        else:
            return
        self._reported.add(key)
        info = self.ctx.optimizers.known.get(event.optimizer)
        self.ctx.report(DIVERGING, at=(info.created_at if info is not None else None) or True, key=key,
                        fields={"how": how, "before": first, "after": norm, "ratio": ratio, "first": 1,
                                "step": event.index, "remedy": remedy}, evidence={"first_norm": first, "norm": norm})


class ScalerSkips(Detector):
    """TD492: a GradScaler that skipped many optimizer steps."""

    ORDER = 110
    rules = (SCALER_SKIPS,)

    def __init__(self, ctx: Observed) -> None:
        super().__init__(ctx)
        self._clipping: GradientClipping | None = None

    def install(self) -> None:
        self._clipping = self.ctx.instrument(GradientClipping)

    def on_finish(self, outcome: Outcome) -> None:
        state = self._clipping.scaler if self._clipping is not None else None
        if state is None or not state.steps:
            return
        for optimizer, info in list(self.ctx.optimizers.known.items()):
            calls = state.steps.get(id(optimizer), 0)
            skipped = calls - info.steps
            if skipped > SKIPS and skipped > SKIPPED_SHARE * calls:
                scale = min((s.get_scale() for s in list(state.scalers)), default=float("nan"))
                self.ctx.report(SCALER_SKIPS, at=info.created_at or True, key=id(optimizer),
                                fields={"skipped": skipped, "steps": calls, "scale": scale},
                                evidence={"skipped": skipped, "scaler_steps": calls})


class LowPrecisionLoss(Detector):
    """TD493: a loss in float16 / bfloat16 given to backward() (once)."""

    ORDER = 120
    rules = (LOW_PRECISION,)
    DIGITS = {torch.bfloat16: 3, torch.float16: 4}

    def __init__(self, ctx: Observed) -> None:
        super().__init__(ctx)
        self._done = False

    def on_backward(self, event: Backward) -> None:
        if self._done or not event.tensors:
            return
        loss = event.tensors[0]
        if isinstance(loss, torch.Tensor) and loss.dtype in self.DIGITS and loss.numel() == 1:
            self._done = True
            self.ctx.report(LOW_PRECISION,
                            fields={"dtype": str(loss.dtype).replace("torch.", ""), "digits": self.DIGITS[loss.dtype],
                                    "resolution": torch.finfo(loss.dtype).eps})
