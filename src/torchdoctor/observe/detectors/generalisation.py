"""What the losses say about the data: a validation loss that rises while the training loss
falls (TD488), one far below the training loss (TD498, info), and a classification target whose
classes are heavily skewed for a plain loss (TD499).

Evaluations are the losses computed with autograd off after training began (a no-grad forward
on other batches, as TD133 reads it): the no-grad losses between two training losses make one
evaluation. Each loss value is kept as a detached reference (no read); an evaluation's mean and
the mean of the training losses just before it are read once, when the next training loss
arrives (or at the end): one read per evaluation, none per step.

Thresholds: SageMaker Debugger's Overfit rule reports a validation loss 10% above the training
loss (`ratio_threshold` 0.1, patience 1); a single noisy evaluation does that on correct runs, so
here the validation loss must also have risen at each of the last `PATIENCE` evaluations, by
`ROSE` of its best value in all, while the training loss fell by `FELL`. Debugger's ClassImbalance
reports a largest to smallest class count above 10 after 500 samples; the same here, over the
first sampled batches.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from torch.utils.data import BatchSampler, RandomSampler, SequentialSampler

from torchdoctor.core.finding import Severity
from torchdoctor.core.locate import caller_in_user_code
from torchdoctor.observe.detector import Detector
from torchdoctor.observe.events import LoaderIter, Location, LossCall
from torchdoctor.observe.outcome import Outcome
from torchdoctor.rules.data.class_imbalance import RULE as IMBALANCE
from torchdoctor.rules.data.validation_loss_below_training import RULE as BELOW
from torchdoctor.rules.optimizer.validation_loss_rising import RULE as RISING

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Observed

#: overfitting: the validation loss rose at each of the last PATIENCE evaluations, by ROSE of its
#: best value in all and to GAP above the training loss (Debugger's ratio), while the training
#: loss fell by FELL of its value at the best evaluation
PATIENCE = 3
ROSE = 0.10
GAP = 0.10
FELL = 0.10
#: the training losses an evaluation is compared with: the last ones since the evaluation before it
TRAIN_WINDOW = 20
#: info: the validation loss below this share of the training loss at each of the last two evaluations
BELOW_SHARE = 0.5
#: class imbalance: largest / smallest class count above RATIO (Debugger's default), judged once
#: MIN_SAMPLES samples (and SAMPLES_PER_CLASS a class) were seen, within the first MAX_CALLS losses
RATIO = 10.0
MIN_SAMPLES = 500
SAMPLES_PER_CLASS = 20
MAX_CALLS = 200
#: ... and a majority class: the largest holds at least this share (a long tail of rare classes
#: beside several common ones, as random synthetic labels draw, is not what a plain loss drowns)
MAJORITY = 0.5
MAX_CLASSES = 1000
_CLASS_LOSSES = frozenset({"cross_entropy", "nll_loss"})
_PLAIN_SAMPLERS = (RandomSampler, SequentialSampler)


@dataclass
class _Evaluation:
    values: list[torch.Tensor]
    train: list[torch.Tensor]
    step: int
    epoch: int | None
    at: Location | None


class ValidationGap(Detector):
    """TD488 / TD498: the validation loss against the training loss, evaluation by evaluation."""

    ORDER = 375
    rules = (RISING, BELOW)

    def __init__(self, ctx: Observed) -> None:
        super().__init__(ctx)
        self._function: str | None = None  # the training loss's function
        self._train: deque[torch.Tensor] = deque(maxlen=TRAIN_WINDOW)
        self._open: _Evaluation | None = None
        self._done: list[tuple[float, float, int, int | None, Location | None]] = []  # (val, train, step, epoch, at)
        self._epoch: int | None = None
        self._loader_index: int | None = None
        self._rising_reported = False
        self._finished = False

    def on_loader_iter(self, event: LoaderIter) -> None:
        self._loader_index = event.index

    def on_loss_end(self, event: LossCall) -> None:
        result = event.result
        if self._finished or not isinstance(result, torch.Tensor) or result.dim() != 0 or not result.is_floating_point():
            return
        if result.requires_grad and torch.is_grad_enabled():
            if self._open is not None:
                self._close()
            if self._function != event.function:
                self._function = event.function
                self._train.clear()
            self._train.append(result.detach())
            self._epoch = self._loader_index
            return
        if self._function != event.function or not self._train:
            return  # not an evaluation of the training loss (or before training)
        if self._open is None:
            self._open = _Evaluation([], list(self._train), self.ctx.steps, self._epoch, caller_in_user_code())
            self._train.clear()  # the next evaluation is compared with the training losses after this one
        self._open.values.append(result.detach())

    def on_finish(self, outcome: Outcome) -> None:
        if self._open is not None:
            self._close()
        self._finished = True
        self._judge_below()

    def _close(self) -> None:
        evaluation, self._open = self._open, None
        if evaluation is None or not evaluation.values or not evaluation.train:
            return
        val, train = torch.stack([torch.stack(evaluation.values).float().mean(), torch.stack(evaluation.train).float().mean()]).tolist()
        if not (math.isfinite(val) and math.isfinite(train)):
            return
        self._done.append((val, train, evaluation.step, evaluation.epoch, evaluation.at))
        self._judge_rising()

    def _judge_rising(self) -> None:
        done = self._done
        if self._rising_reported or len(done) < PATIENCE + 1:
            return
        best = min(range(len(done)), key=lambda i: done[i][0])
        vals = [v for v, *_ in done[-PATIENCE - 1:]]
        best_val, best_train, best_step, best_epoch, _ = done[best]
        val, train, step, epoch, at = done[-1]
        if best > len(done) - 1 - PATIENCE or not all(a < b for a, b in zip(vals, vals[1:])) or best_val <= 0:
            return  # not rising at each of the last evaluations since the best one
        if val < (1 + ROSE) * best_val or train > (1 - FELL) * best_train or val - train <= GAP * abs(train):
            return
        self._rising_reported = True
        when = f"epoch {best_epoch}" if best_epoch is not None else f"evaluation {best + 1}"
        shown = done[best:]
        history = ", ".join(f"{v:.4g}" for v, *_ in shown[-8:])
        trains = ", ".join(f"{t:.4g}" for _, t, *_ in shown[-8:])
        self.ctx.report(RISING, at=at or True,
                        fields={"history": history, "trains": trains, "count": len(done) - 1 - best, "when": when,
                                "step": best_step, "best": f"{best_val:.4g}"},
                        evidence={"validation": [round(v, 6) for v, *_ in done], "training": [round(t, 6) for _, t, *_ in done],
                                  "best_evaluation": best + 1, "best_step": best_step})

    def _judge_below(self) -> None:
        if len(self._done) < 3:
            return  # the first evaluation follows the steepest part of the training curve
        last = self._done[-2:]
        if all(0 < v < BELOW_SHARE * t for v, t, *_ in last):
            val, train, step, _, at = last[-1]
            self.ctx.report(BELOW, at=at or True, severity=Severity.INFO,
                            fields={"val": f"{val:.4g}", "train": f"{train:.4g}", "share": f"{val / train:.0%}",
                                    "count": len(last), "window": TRAIN_WINDOW})


class ClassImbalance(Detector):
    """TD499: the sampled batches' class counts skewed past `RATIO` while the loss has no class
    weights and the loaders sample plainly."""

    ORDER = 376
    rules = (IMBALANCE,)

    def __init__(self, ctx: Observed) -> None:
        super().__init__(ctx)
        self._counts: torch.Tensor | None = None
        self._calls = 0
        self._samples = 0
        self._classes = 0
        self._weighted = False
        self._done = False
        self._at: Location | None = None

    def on_loader_iter(self, event: LoaderIter) -> None:
        loader = event.loader
        sampler, batch_sampler = getattr(loader, "sampler", None), getattr(loader, "batch_sampler", None)
        if not isinstance(sampler, _PLAIN_SAMPLERS) or (batch_sampler is not None and type(batch_sampler) is not BatchSampler):
            # a weighted or custom sampler (balanced batches, a DistributedSampler is judged plain below)
            if type(sampler).__name__ != "DistributedSampler":
                self._weighted = True

    def on_loss(self, event: LossCall) -> None:
        if self._done or event.function not in _CLASS_LOSSES or not torch.is_grad_enabled():
            return
        target, input_ = event.target, event.input
        if not (isinstance(target, torch.Tensor) and isinstance(input_, torch.Tensor)) or target.dim() != 1 \
                or target.is_floating_point() or target.dtype == torch.bool or input_.dim() != 2:
            return  # one class per sample only (not a segmentation's pixels or a language model's tokens)
        classes = int(input_.shape[1])
        if self._weighted or event.kwargs.get("weight") is not None or (len(event.args) > 2 and event.args[2] is not None) or not 2 <= classes <= MAX_CLASSES:
            self._done = True  # class weights given (as a keyword, or positionally), or a balanced sampler
            return
        if classes != self._classes:
            self._counts, self._classes, self._samples = None, classes, 0
        with torch.no_grad():
            kept = target[(target >= 0) & (target < classes)]
            counts = torch.bincount(kept, minlength=classes)
            self._counts = counts if self._counts is None else self._counts + counts
        self._samples += int(target.shape[0])
        self._calls += 1
        if self._at is None:
            self._at = caller_in_user_code()
        if self._samples >= max(MIN_SAMPLES, SAMPLES_PER_CLASS * classes) or self._calls >= MAX_CALLS:
            self._done = True
            self._judge()

    def _judge(self) -> None:
        if self._counts is None or self._weighted or self._samples < max(MIN_SAMPLES, SAMPLES_PER_CLASS * self._classes):
            return
        counts = self._counts.tolist()
        present = [(c, k) for k, c in enumerate(counts) if c > 0]
        if len(present) < 2:
            return
        (most, big), (least, small) = max(present), min(present)
        if most <= RATIO * least or most < MAJORITY * sum(counts):
            return
        total = sum(counts)
        self.ctx.report(IMBALANCE, at=self._at or True,
                        fields={"samples": total, "calls": self._calls, "big": big, "most": most, "share_big": f"{most / total:.0%}",
                                "small": small, "least": least, "share_small": f"{least / total:.1%}", "ratio": f"{most / least:.3g}"},
                        evidence={"counts": counts})
