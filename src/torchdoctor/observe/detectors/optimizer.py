"""The optimizer's side of a training step: resets, order, steps without gradients, coverage.

All decisions are taken from the first optimizer steps (warm-up), where the session watches
gradients arrive; they describe the shape of the training loop, which does not change.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from torch import nn
from torch.optim.optimizer import Optimizer

from torchdoctor.core.locate import caller_in_user_code
from torchdoctor.observe.detector import Detector
from torchdoctor.observe.events import Backward, Location, Step, ZeroGrad
from torchdoctor.observe.instruments.optim import params_of
from torchdoctor.observe.outcome import Outcome
from torchdoctor.observe.support import names_text
from torchdoctor.rules.optimizer.accumulation_reset_every_micro_batch import RULE as ACCUMULATION_RESET
from torchdoctor.rules.optimizer.backward_without_step import RULE as BACKWARD_WITHOUT_STEP
from torchdoctor.rules.optimizer.missing_zero_grad import RULE as MISSING_ZERO_GRAD
from torchdoctor.rules.optimizer.parameter_not_in_optimizer import RULE as NOT_IN_OPTIMIZER
from torchdoctor.rules.optimizer.step_without_backward import RULE as STEP_WITHOUT_BACKWARD
from torchdoctor.rules.optimizer.zero_grad_before_step import RULE as ZERO_GRAD_BEFORE_STEP

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Observed

class GradientResets(Detector):
    """TD110: gradients carried from one step into the next; TD111: reset between backward and step."""

    ORDER = 10
    rules = (MISSING_ZERO_GRAD, ZERO_GRAD_BEFORE_STEP)

    def __init__(self, ctx: Observed) -> None:
        super().__init__(ctx)
        self._previous_step_seq: weakref.WeakKeyDictionary[Optimizer, int] = weakref.WeakKeyDictionary()
        self._reported: set[int] = set()
        self._last_backward: Location | None = None

    def on_backward(self, event: Backward) -> None:
        if self.ctx.warmup:
            self._last_backward = caller_in_user_code()

    def on_step(self, event: Step) -> None:
        if not self.ctx.warmup or id(event.optimizer) in self._reported:
            return
        if not event.closure and self._missing_reset(event):
            return
        reset = self._reset_after_backward(event.optimizer)
        if reset is not None:
            self._reported.add(id(event.optimizer))
            self.ctx.report(ZERO_GRAD_BEFORE_STEP, at=reset)

    def on_step_end(self, event: Step) -> None:
        if not self.ctx.warmup:
            return
        if event.closure and id(event.optimizer) not in self._reported:
            # `step(closure)` (LBFGS): the closure computes the gradients inside step()
            self._missing_reset(event, closure=True)
        self._previous_step_seq[event.optimizer] = self.ctx.seq

    def _missing_reset(self, event: Step, closure: bool = False) -> bool:
        if event.index < 2 or not self._carried(event.optimizer):
            return False
        self._reported.add(id(event.optimizer))
        if closure:
            self.ctx.report(
                MISSING_ZERO_GRAD, variant="closure",
            )
        else:
            # at the backward() that adds onto the old gradients: the reset belongs before it
            self.ctx.report(MISSING_ZERO_GRAD, at=self._last_backward or True)
        return True

    def _carried(self, optimizer: Optimizer) -> bool:
        """Every parameter that got a gradient since the last step found that step's gradient
        still in `.grad` when the new one arrived, and no reset happened afterwards."""
        records = [self.ctx.grads.record(p) for p in params_of(optimizer) if p.requires_grad]
        active = [r for r in records if r is not None and r.arrivals]
        return bool(active) and all(r.carried for r in active)

    def _reset_after_backward(self, optimizer: Optimizer) -> Location | bool | None:
        """Where a zero_grad() covering this optimizer ran after the last backward() (and after
        the previous step); None when there was none."""
        previous = self._previous_step_seq.get(optimizer, 0)
        backward = self.ctx.last_backward_seq
        if not previous < backward:
            return None
        for owner, location in list(self.ctx.zero_grad_calls.items()):
            seq = self.ctx.last_zero_grad.get(id(owner), 0)
            if seq > backward and _covers(owner, optimizer):
                return location or True
        return None


@dataclass
class Discards:
    """Backward passes a zero_grad() threw away before this optimizer's step, step by step."""

    count: int = 0
    sites: set[Location | None] = field(default_factory=set)
    reset_at: Location | None = None
    history: list[tuple[int, bool, Location | None]] = field(default_factory=list)  # (count, same line, reset)


class AccumulationResets(Detector):
    """TD115: gradient accumulation undone by a zero_grad() before every backward() (warm-up).

    The same backward() line runs several times per step and a reset covering the optimizer
    runs between those passes, the same number of times before each warm-up step."""

    ORDER = 20
    rules = (ACCUMULATION_RESET,)
    #: consecutive steps with the same pattern before it is reported (warm-up has 3)
    STEPS = 3

    def __init__(self, ctx: Observed) -> None:
        super().__init__(ctx)
        self._pending: list[Location | None] = []  # backward sites since the last reset or step
        self._discards: weakref.WeakKeyDictionary[Optimizer, Discards] = weakref.WeakKeyDictionary()
        self._reported: set[int] = set()

    def on_backward(self, event: Backward) -> None:
        if self.ctx.warmup:
            self._pending.append(caller_in_user_code())

    def on_zero_grad(self, event: ZeroGrad) -> None:
        if not self.ctx.warmup or not self._pending:
            return
        for optimizer in list(self.ctx.optimizers.known.keys()):
            if _covers(event.owner, optimizer):
                discards = self._discards.setdefault(optimizer, Discards())
                discards.count += len(self._pending)
                discards.sites.update(self._pending)
                discards.reset_at = discards.reset_at or event.location
        self._pending = []

    def on_step(self, event: Step) -> None:
        if not self.ctx.warmup or event.closure:
            self._pending = []
            return
        discards = self._discards.setdefault(event.optimizer, Discards())
        fed_by = set(self._pending)
        same_line = len(fed_by) == 1 and None not in fed_by and discards.sites <= fed_by
        discards.history.append((discards.count, same_line, discards.reset_at))
        discards.count, discards.sites, discards.reset_at = 0, set(), None
        self._pending = []
        recent = discards.history[-self.STEPS:]
        if len(recent) < self.STEPS or id(event.optimizer) in self._reported:
            return
        counts = {count for count, _, _ in recent}
        if len(counts) == 1 and min(counts) >= 1 and all(same for _, same, _ in recent):
            self._reported.add(id(event.optimizer))
            discarded = counts.pop()
            self.ctx.report(ACCUMULATION_RESET, at=recent[-1][2] or True, key=id(event.optimizer),
                            fields={"every": f"once every {discarded + 1} backward passes"},
                            evidence={"discarded_per_step": discarded})


def _covers(owner: Any, optimizer: Optimizer) -> bool:
    """Whether `owner.zero_grad()` resets (some of) the optimizer's parameters."""
    if owner is optimizer:
        return True
    if not isinstance(owner, nn.Module):
        return False
    params = {id(p) for p in params_of(optimizer)}
    return any(id(p) in params for p in owner.parameters())


class StepsWithoutGradients(Detector):
    """TD400: an optimizer steps with no backward() before; TD401: backward() but never a step."""

    ORDER = 30
    rules = (STEP_WITHOUT_BACKWARD, BACKWARD_WITHOUT_STEP)

    def __init__(self, ctx: Observed) -> None:
        super().__init__(ctx)
        self._backward_at_step: weakref.WeakKeyDictionary[Optimizer, int] = weakref.WeakKeyDictionary()
        self._empty: weakref.WeakKeyDictionary[Optimizer, tuple[int, int, Location | None]] = weakref.WeakKeyDictionary()
        self._first_backward: Location | None = None

    def on_backward(self, event: Backward) -> None:
        if event.index == 1:
            self._first_backward = caller_in_user_code()

    def on_step_end(self, event: Step) -> None:
        if not self.ctx.warmup:
            return
        optimizer = event.optimizer
        completed = self.ctx.backward.completed
        had_backward = completed > self._backward_at_step.get(optimizer, 0)
        self._backward_at_step[optimizer] = completed
        steps, empty, where = self._empty.get(optimizer, (0, 0, None))
        if where is None and not had_backward:
            where = caller_in_user_code()
        self._empty[optimizer] = (steps + 1, empty + (not had_backward), where)

    def on_warmup_end(self) -> None:
        for optimizer, (steps, empty, where) in list(self._empty.items()):
            if steps >= 2 and empty == steps:
                self.ctx.report(STEP_WITHOUT_BACKWARD, at=where, key=id(optimizer), fields={"steps": steps})

    def on_finish(self, outcome: Outcome) -> None:
        backward = self.ctx.backward.completed
        if outcome.completed and self.ctx.steps == 0 and backward >= 2 and len(self.ctx.optimizers.known):
            self.ctx.report(BACKWARD_WITHOUT_STEP, at=self._first_backward, fields={"count": backward})


class OptimizerCoverage(Detector):
    """TD114: parameters that receive gradients but belong to no optimizer.

    Decided after each warm-up step, with the optimizers that exist then (a script builds them
    before it trains), so that short runs are judged while their model is still alive.
    """

    ORDER = 40
    rules = (NOT_IN_OPTIMIZER,)

    def __init__(self, ctx: Observed) -> None:
        super().__init__(ctx)
        self._reported: set[int] = set()

    def on_step_end(self, event: Step) -> None:
        if not self.ctx.warmup:
            return
        optimized = self.ctx.optimizers.optimized()
        for root in self.ctx.model_roots():
            if id(root) in self._reported:
                continue
            names = [
                self.ctx.modules.param_name(param) or name
                for name, param in root.named_parameters()
                if param.requires_grad and param.grad is not None and id(param) not in optimized
            ]
            if not names:
                continue
            partly_optimized = any(id(p) in optimized for p in root.parameters())
            if not partly_optimized and not root.training:
                continue  # a separate model in eval mode that gets gradients: a teacher, a critic
            self._reported.add(id(root))
            self.ctx.report(NOT_IN_OPTIMIZER, at=self._where(), key=id(root),
                            fields={"count": len(names), "names": names_text(names)})

    def _where(self) -> Location | None:
        """The line that built the optimizer: the one to change."""
        for info in self.ctx.optimizers.known.values():
            if info.created_at is not None:
                return info.created_at
        return None
