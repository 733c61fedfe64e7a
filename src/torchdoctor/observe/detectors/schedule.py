"""TD428: the learning rate collapsed because a scheduler was stepped far more often than its
schedule assumes (an epoch-based scheduler stepped every batch).

Decided from the effect. Before every optimizer step the learning rate of each parameter group
is read (a float in the group's dict: no device, no random numbers; a tensor learning rate is
not read) and compared with the highest one seen so far for that group. A step is *low* when
every group with a positive peak is below `RATIO` times its peak. The finding needs:

- the low steps run without a break to the end of the optimizer's life (or of the run), and
  cover at least `SHARE` of its steps and at least `MIN_STEPS`;
- an `LRScheduler` of that optimizer whose `step()` the user's code called at least `CADENCE`
  times per optimizer step (every batch, not every epoch).

Where the thresholds sit (measured on torch 2.13, lr / peak): legitimate schedules that reach
1e-6 do so only for their last few steps (CosineAnnealingLR to `eta_min=0` with `T_max` = the
run's steps: 2 of 4500 steps; PolynomialLR sized to the run: 4 of 4500); the rest stay well
above it (StepLR / MultiStepLR per epoch, ImageNet style: 1e-3; OneCycleLR with its
defaults: 4e-6; CosineAnnealingWarmRestarts: 1.5e-6 at the bottom of a 10-step cycle, lower
for longer cycles but for a step or two, then it climbs back; LinearLR decaying to 0 over the
run: 2e-4 until its very last step; CyclicLR: 1e-3; a warm-up from 0 is never low
because its peak comes later; a constant learning rate, or 0 on purpose, never has a low
step). Per-epoch schedules that do decay below 1e-6 for long (ExponentialLR(0.95) over 300
epochs: 10% of the run; ReduceLROnPlateau on a stalled metric: 75%) are designs, not a
scheduler stepped too often, and the `CADENCE` condition leaves them alone. The bug itself
is far past the thresholds: StepLR(step_size=30, gamma=0.1) stepped every batch over 50
batches x 90 epochs is below 1e-6 for 95% of the run and ends at 1e-149.

Per step this costs a dict lookup and, per parameter group, a float read and two
comparisons. The decision is taken when the optimizer is freed (a training function
returned) or when the run ends.
"""

from __future__ import annotations

import functools
import weakref
from typing import TYPE_CHECKING, Any

from torch.optim.optimizer import Optimizer

from torchdoctor.observe.detector import Detector
from torchdoctor.observe.events import Step
from torchdoctor.observe.instruments.schedulers import SchedulerInfo, Schedulers
from torchdoctor.observe.outcome import Outcome
from torchdoctor.observe.support import source_call
from torchdoctor.rules.optimizer.learning_rate_collapsed import RULE

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Observed

#: a step is low when every learning rate is below this fraction of its peak
RATIO = 1e-6
#: the low steps, up to the end, must cover this share of the optimizer's steps...
SHARE = 0.5
#: ...and at least this many steps
MIN_STEPS = 20
#: the scheduler blamed stepped at least this many times per optimizer step
CADENCE = 0.5


class LearningRates:
    """One optimizer's steps, the peak learning rate of each group, and where the low stretch
    that lasts until now began (1-based step; None when the last step was not low)."""

    __slots__ = ("low_since", "peaks", "ref", "schedulers", "steps")

    def __init__(self) -> None:
        self.steps = 0
        self.peaks: list[float] = []
        self.low_since: int | None = None
        self.schedulers: list[SchedulerInfo] = []
        self.ref: weakref.ref[Optimizer] | None = None

    def observe(self, groups: list[dict[str, Any]]) -> None:
        self.steps += 1
        peaks = self.peaks
        if len(peaks) != len(groups):
            del peaks[len(groups):]
            peaks.extend([0.0] * (len(groups) - len(peaks)))
        low: bool | None = None  # None: no group with a positive peak yet
        for i, group in enumerate(groups):
            lr = group.get("lr")
            if type(lr) is not float and type(lr) is not int:
                low = False  # a tensor learning rate (capturable) is never read
                continue
            peak = peaks[i]
            if lr > peak:
                peaks[i] = peak = lr
            if peak > 0 and low is not False:
                low = 0 <= lr < peak * RATIO
        if not low:
            self.low_since = None
        elif self.low_since is None:
            self.low_since = self.steps

    def low_steps(self) -> int:
        return self.steps - self.low_since + 1 if self.low_since is not None else 0

    def blamed(self) -> SchedulerInfo | None:
        """The scheduler stepped most often, when the learning rate collapsed and it stepped
        about every batch; None otherwise."""
        low = self.low_steps()
        if low < MIN_STEPS or low < SHARE * self.steps:
            return None
        often = [info for info in self.schedulers if info.steps >= CADENCE * self.steps]
        return max(often, key=lambda info: info.steps, default=None)


class LearningRateCollapse(Detector):
    """TD428 learning-rate-collapsed."""

    ORDER = 360
    rules = (RULE,)

    def __init__(self, ctx: Observed) -> None:
        super().__init__(ctx)
        self._rates: dict[int, LearningRates] = {}
        #: optimizers freed during the run whose learning rate had collapsed: reported at the next step
        self._freed: list[LearningRates] = []

    def install(self) -> None:
        self.ctx.instrument(Schedulers).listen(self._scheduled)

    def on_step(self, event: Step) -> None:
        rates = self._rates.get(id(event.optimizer)) or self._track(event.optimizer)
        if rates is not None:
            rates.observe(event.optimizer.param_groups)
        if self._freed:
            self._report_freed()

    def on_finish(self, outcome: Outcome) -> None:
        self._report_freed()
        for rates in list(self._rates.values()):
            self._conclude(rates)

    def _scheduled(self, optimizer: Optimizer, info: SchedulerInfo) -> None:
        rates = self._rates.get(id(optimizer)) or self._track(optimizer)
        if rates is not None:
            rates.schedulers.append(info)

    def _track(self, optimizer: Optimizer) -> LearningRates | None:
        key = id(optimizer)
        rates = LearningRates()
        try:
            rates.ref = weakref.ref(optimizer, functools.partial(self._gone, key))
        except TypeError:
            return None
        self._rates[key] = rates
        return rates

    def _gone(self, key: int, _ref: object = None) -> None:
        """The optimizer was freed (garbage collection: only bookkeeping here)."""
        rates = self._rates.pop(key, None)
        if rates is not None and rates.blamed() is not None:
            self._freed.append(rates)

    def _report_freed(self) -> None:
        freed, self._freed = self._freed, []
        for rates in freed:
            self._conclude(rates)

    def _conclude(self, rates: LearningRates) -> None:
        info = rates.blamed()
        if info is None or rates.low_since is None:
            return
        call = source_call(info.stepped_at, r"[\w.\[\]]+\.step")
        self.ctx.report(
            RULE, at=info.stepped_at, key=id(rates),
            fields={"peak": f"{max(rates.peaks):.3g}", "start": rates.low_since, "low": rates.low_steps(),
                    "steps": rates.steps, "call": f"`{call}`" if call else "the scheduler's `step()`",
                    "scheduler": f"{info.kind}, {info.settings}" if info.settings else info.kind, "count": info.steps,
                    "cadence": cadence(info.steps, rates.steps)},
            evidence={"peak_lr": max(rates.peaks), "low_steps": rates.low_steps(), "optimizer_steps": rates.steps,
                      "scheduler": info.kind, "scheduler_steps": info.steps},
        )


def cadence(scheduler_steps: int, optimizer_steps: int) -> str:
    """"once per optimizer step", "4 times per optimizer step", "once every 2 optimizer steps"."""
    per_step = scheduler_steps / optimizer_steps
    if 0.95 <= per_step <= 1.05:
        return "once per optimizer step"
    if per_step > 1:
        return f"{per_step:.2g} times per optimizer step"
    return f"once every {1 / per_step:.2g} optimizer steps"
