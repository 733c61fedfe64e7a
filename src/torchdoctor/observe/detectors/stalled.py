"""TD494: training that does not move. The classification loss the training computes stays
where it starts (or climbs) while one optimizer steps.

The value of each `cross_entropy` / `nll_loss` computed with grad enabled, on integer class
targets, is kept (a detached reference, no read): the first `WINDOW` of them, and the last
`WINDOW`. At checkpoints (optimizer steps 100, 200, 400, ... and the end of the run, with at
least `MIN_STEPS` steps and `3 * WINDOW` computations) the two means are read in one go and
compared. The loss has *moved* when the last mean is at least `MOVED` below the first; once
it has, the run is never reported. It has *stalled* when the last mean is above
`(1 - STALLED)` times the first and at least half the chance level `ln(C)` (a loss already
near zero is converged, not stuck). A stalled loss is reported only with a cause that correct
code does not share: it climbed clearly (by ROSE of where it began, to ABOVE_CHANCE times the
chance level), it stays ABOVE_CHANCE times the chance level (worse than guessing), or the
weights barely moved (a sample of each parameter, copied after the first step, changed by less
than `BARELY_MOVED` of its size). A flat loss at chance with weights that move is what correct
code draws on labels that carry no information (random synthetic data, the usual smoke test):
it is not reported. A fall counts, either way, only where it also stands out
of the scatter of the batches' losses by `SCATTER` standard errors of the difference of the two
means: a flat loss whose small batches happen to average a few percent lower late in the run
has not moved. Steps and ratios only: the machine's load changes nothing.

Where the thresholds sit, on this project's mutation bench (bench/mutation_bench.py): the
correct programs' losses fall by 10% to 60% over their shortened runs (the smallest fall, a
character GPT over 60 steps, 23%); a learning rate 10,000 times too small moves the mean by
under 1% and the weights by under 0.1% (correct code on random labels moves them by 1% and more:
Adam at 1e-4, SGD at 0.01); a learning rate 100 times too large sends the loss up or leaves it
above where it began; a maximised loss climbs. Inputs paired with other samples' labels keep it
at chance with weights that move, as random labels do: not told apart, not reported.
"""

from __future__ import annotations

import math
import weakref
from collections import deque
from typing import TYPE_CHECKING, Any

import torch

from torchdoctor.observe.detector import Detector
from torchdoctor.observe.events import LossCall, Step
from torchdoctor.observe.instruments.optim import params_of
from torchdoctor.observe.outcome import Outcome
from torchdoctor.observe.support import param_sample
from torchdoctor.rules.optimizer.training_loss_stalled import RULE

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Observed

WINDOW = 10
MIN_STEPS = 40
MOVED = 0.03
STALLED = 0.02
#: a warning needs a loss that climbs: by this fraction of where it began, and to this multiple of chance
ROSE = 0.10
ABOVE_CHANCE = 1.5
#: weights that changed by less than this fraction of their size since the first step barely moved
BARELY_MOVED = 1e-3
#: parameters sampled after the first step (PARAM_SAMPLE elements of each)
MAX_PARAMS = 32
#: a fall counts only where it stands out of the batches' scatter, by this many standard errors of
#: the difference of the two windows' means (small random batches scatter a flat loss by 5% and more)
SCATTER = 3.0
FIRST_CHECK = 100
_CLASS_LOSSES = frozenset({"cross_entropy", "nll_loss"})


class StalledLoss(Detector):
    ORDER = 370
    rules = (RULE,)

    def __init__(self, ctx: Observed) -> None:
        super().__init__(ctx)
        self._first: list[torch.Tensor] = []
        self._last: deque[torch.Tensor] = deque(maxlen=WINDOW)
        self._calls = 0
        self._classes = 0
        self._moved = False
        self._done = False
        self._next_check = FIRST_CHECK
        self._stepped: dict[int, weakref.ref[Any]] = {}  # never keeps an optimizer alive
        self._optimizer: tuple[str, Any] = ("optimizer", None)
        self._steps = 0
        #: samples of the optimizer's parameters after its first step, to tell how far they moved
        self._start: list[tuple[weakref.ref[torch.Tensor], torch.Tensor]] = []

    def on_loss_end(self, event: LossCall) -> None:
        if self._done or event.function not in _CLASS_LOSSES:
            return
        result, input_, target = event.result, event.input, event.target
        if not (result.requires_grad and result.dim() == 0 and torch.is_grad_enabled()):
            return  # evaluation, or a per-sample loss reduced by the user
        if not isinstance(target, torch.Tensor) or target.is_floating_point() or input_.dim() < 2:
            return  # class probabilities as targets, or one unbatched sample
        value = result.detach()
        if len(self._first) < WINDOW:
            self._first.append(value)
        self._last.append(value)
        self._calls += 1
        self._classes = int(input_.shape[1])

    def on_step_end(self, event: Step) -> None:
        if self._done:
            return
        optimizer = event.optimizer
        if id(optimizer) not in self._stepped:
            # decided when the optimizer is freed (a training function returned) or at the end
            self._stepped[id(optimizer)] = weakref.ref(optimizer, lambda _: self._conclude())
            info = self.ctx.optimizers.known.get(optimizer)
            self._optimizer = (type(optimizer).__name__, info.created_at if info is not None else None)
            with torch.no_grad():
                params = [p for p in params_of(optimizer) if p.requires_grad][:MAX_PARAMS]
                self._start = [(weakref.ref(p), param_sample(p).clone()) for p in params]
        self._steps = event.index
        if event.index >= self._next_check:
            self._next_check *= 2
            self._check()

    def on_finish(self, outcome: Outcome) -> None:
        self._conclude()

    def _conclude(self) -> None:
        if not self._done and self._steps >= MIN_STEPS:
            self._check()
        self._done = True

    def _check(self) -> None:
        if len(self._stepped) != 1 or self._calls < 3 * WINDOW or self._classes < 2 or self._moved:
            self._done = self._done or len(self._stepped) > 1
            return
        windows = torch.stack([torch.stack(self._first), torch.stack(list(self._last))]).float()
        (first, last), (var_first, var_last) = windows.mean(1).tolist(), windows.var(1).tolist()
        if not all(math.isfinite(v) for v in (first, last, var_first, var_last)) or first <= 0:
            return  # NaN has its own rules (TD145, TD490)
        fall = first - last
        scatter = math.sqrt((var_first + var_last) / WINDOW)  # the standard error of `fall`
        if fall >= max(MOVED * first, SCATTER * scatter):
            self._moved = True
            return
        chance = math.log(self._classes)
        if fall >= max(STALLED * first, SCATTER * scatter) or last < 0.5 * chance:
            return
        cause = self._cause(first, last, fall, scatter, chance)
        if cause is None:
            return  # flat at chance while the weights move: also what random labels give
        self._done = True
        trend, why = cause
        name, created_at = self._optimizer
        self.ctx.report(RULE, at=created_at or None,
                        fields={"trend": trend, "steps": self._steps, "optimizer": name, "first": f"{first:.4g}",
                                "last": f"{last:.4g}", "window": WINDOW,
                                "chance": f"chance level for {self._classes} classes is ln({self._classes}) = {chance:.4g}",
                                "why": why})

    def _cause(self, first: float, last: float, fall: float, scatter: float, chance: float) -> tuple[str, str] | None:
        """How the loss went and what correct code would not do, or None where correct code could."""
        if -fall >= max(ROSE * first, SCATTER * scatter) and last >= ABOVE_CHANCE * chance:
            return "rose", ""
        if last >= ABOVE_CHANCE * chance:
            return "did not fall", f"; it stays at {last / chance:.2g} times the chance level, worse than guessing"
        moved = self._moved_since_start()
        if moved is not None and moved < BARELY_MOVED:
            return "did not fall", f"; the weights moved by {moved:.2%} of their size since its first step"
        return None

    def _moved_since_start(self) -> float | None:
        """How far the sampled parameters moved since the first step, relative to their size."""
        with torch.no_grad():
            pairs = [(param_sample(p).float(), old.float()) for ref, old in self._start if (p := ref()) is not None]
            if not pairs:
                return None
            size = math.sqrt(sum(float(old.pow(2).sum()) for _, old in pairs))
            change = math.sqrt(sum(float((now - old).pow(2).sum()) for now, old in pairs))
        return change / size if size > 0 and math.isfinite(change) else None
