"""Overfit one small batch: the loss should halve within a bounded number of steps (TD304).

It trains a fresh copy with the user's optimizer. Halving passes; a loss still falling when
the budget runs out is inconclusive (slow is not broken); a loss that has stopped falling far
from its start fails. Then it retries with Adam(lr=1e-3), to tell "the optimizer settings
barely move the model" (info) from "this model and loss cannot learn even one batch"
(warning). The time spent is bounded by a number of steps and by a multiple of one step.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from torchdoctor.core.finding import Severity
from torchdoctor.health.batch import Batch, call_model
from torchdoctor.health.checks import Outcome
from torchdoctor.health.context import CheckContext
from torchdoctor.introspect.sites import where
from torchdoctor.rules.optimizer.cannot_overfit_batch import RULE as CANNOT_OVERFIT

NAME = "overfit"
TITLE = "one small batch can be overfitted"
RULES = (CANNOT_OVERFIT.code,)

#: the loss must fall to this fraction of its first value
TARGET = 0.5
#: below this fall over the last third of the steps (relative to the first loss), it is stuck
PLATEAU = 0.02
MIN_STEPS_FOR_VERDICT = 30
#: at most this many training steps' worth of time per attempt (and at least MIN_SECONDS)
STEP_BUDGET = 12
MIN_SECONDS = 1.0


@dataclass
class Attempt:
    label: str
    losses: list[float] = field(default_factory=list)
    error: str | None = None

    @property
    def plateaued(self) -> bool:
        """Stuck: over the last third of the steps the loss fell by less than PLATEAU of its
        first value, and much less than over the first third (or it became NaN). A loss still
        falling is inconclusive, not a failure."""
        if not self.losses or not all(math.isfinite(v) for v in self.losses):
            return bool(self.losses) or self.error is not None
        if len(self.losses) < MIN_STEPS_FOR_VERDICT:
            return False
        n, first = len(self.losses), abs(self.losses[0])
        early = self.losses[0] - min(self.losses[: n // 3])
        late = self.losses[n * 2 // 3] - min(self.losses[n * 2 // 3:])
        # stuck: little progress late, and much less than early on (a steady slow decline is
        # not a plateau), or no real progress at all
        return late < PLATEAU * first and (late < 0.25 * early or early < PLATEAU * first)

    @property
    def succeeded(self) -> bool:
        if len(self.losses) < 2 or not all(math.isfinite(v) for v in self.losses):
            return False
        first = self.losses[0]
        return first - min(self.losses) >= (1 - TARGET) * abs(first) and abs(first) > 1e-8

    def curve(self, points: int = 6) -> str:
        if self.error:
            return self.error
        if not self.losses:
            return "no step could be taken"
        picks = sorted({round(i * (len(self.losses) - 1) / (points - 1)) for i in range(points)})
        return " -> ".join(f"{self.losses[i]:.4g}" for i in picks) + f" ({len(self.losses)} steps)"


def run(ctx: CheckContext) -> Outcome:
    tp = ctx.train_pass()
    if tp.forward_failure is not None or tp.loss_failure is not None or tp.backward_failure is not None:
        return Outcome(skipped="the training pass failed")
    loss_fn = ctx.loss_call(tp)
    if loss_fn is None or tp.loss is None:
        return Outcome(skipped="no loss to train with")
    if not bool(torch.isfinite(tp.loss.detach()).all()):
        return Outcome(skipped="the loss is NaN or Inf (see the non-finite check)")
    if not any(p.requires_grad for p in ctx.subject.model.parameters()):
        return Outcome(skipped="no trainable parameters")
    batch = ctx.batch.head(ctx.options.overfit_samples)
    budget = max(MIN_SECONDS, STEP_BUDGET * (ctx.step_seconds or tp.seconds))
    steps = ctx.options.overfit_steps
    users = ctx.subject.optimizer is not None
    first = _attempt(ctx, batch, steps, budget, use_own_optimizer=users)
    if first.succeeded:
        return Outcome(detail=f"{first.label}: loss {first.curve(3)}")
    if not first.plateaued:
        return Outcome(detail=f"inconclusive: with {first.label} the loss is still falling ({first.curve(3)})")
    if not users or _is_fallback(ctx.subject.optimizer):
        return _report(ctx, batch, first, None)
    second = _attempt(ctx, batch, steps, budget, use_own_optimizer=False)
    if not second.succeeded and not second.plateaued:
        return _report(ctx, batch, first, second, still_falling=True)
    return _report(ctx, batch, first, second)


def _attempt(ctx: CheckContext, batch: Batch, steps: int, budget: float, use_own_optimizer: bool) -> Attempt:
    copies = ctx.copies()
    model = copies.model
    params = [p for p in model.parameters() if p.requires_grad]
    if use_own_optimizer and copies.optimizer is not None:
        optimizer = copies.optimizer
        attempt = Attempt(_describe(optimizer))
    else:
        optimizer = torch.optim.Adam(params, lr=1e-3)
        attempt = Attempt("Adam(lr=0.001)")
    loss_fn: Callable[[Any, Any], torch.Tensor] = copies.loss_fn if copies.loss_fn is not None else ctx.loss_call(ctx.train_pass())  # type: ignore[assignment]
    model.train()
    inputs, targets = batch.fresh()
    deadline = time.perf_counter() + budget
    with torch.enable_grad():
        for _ in range(steps):
            try:
                optimizer.zero_grad(set_to_none=True)
                loss = loss_fn(call_model(model, inputs), targets)
                loss = loss if loss.dim() == 0 else loss.float().mean()
                value = float(loss)
                attempt.losses.append(value)
                if not math.isfinite(value) or attempt.succeeded:
                    break
                loss.backward()
                optimizer.step()
            except Exception as exc:
                attempt.error = f"training raised {type(exc).__name__}: {exc}"
                break
            if time.perf_counter() > deadline:
                break
    return attempt


def _is_fallback(optimizer: torch.optim.Optimizer | None) -> bool:
    """The user's optimizer is already what the retry would use."""
    if type(optimizer) not in (torch.optim.Adam, torch.optim.AdamW):
        return False
    lr = optimizer.param_groups[0].get("lr")
    return lr is not None and not isinstance(lr, torch.Tensor) and float(lr) >= 1e-3


def _describe(optimizer: torch.optim.Optimizer) -> str:
    group = optimizer.param_groups[0]
    lr = group.get("lr")
    lr_text = f"{float(lr):.3g}" if lr is not None else "?"
    return f"your {type(optimizer).__name__}(lr={lr_text})"


def _report(ctx: CheckContext, batch: Batch, first: Attempt, second: Attempt | None, still_falling: bool = False) -> Outcome:
    samples = batch.size or "?"
    if second is not None and (second.succeeded or still_falling):
        outcome = "halves it" if second.succeeded else "keeps lowering it"
        message = (
            f"the loss on one batch of {samples} samples stops falling with {first.label}: {first.curve()}; "
            f"Adam(lr=0.001) {outcome} ({second.curve(3)}): "
            "the learning rate or weight decay is likely off (expected during a warm-up that starts near 0)"
        )
        site = ctx.locate.best(ctx.locate.of(ctx.subject.optimizer))
        finding = CANNOT_OVERFIT.finding(**where(site), message=message, severity=Severity.INFO,
                                         samples=samples, steps=len(first.losses), optimizer=first.label, curve=first.curve())
        return Outcome([finding], detail=f"{first.label} is slow; Adam(lr=0.001) overfits")
    attempts = [first] + ([second] if second is not None else [])
    labels = " nor ".join(a.label for a in attempts) if len(attempts) > 1 else first.label
    curves = first.curve() if len(attempts) == 1 else "; ".join(f"{a.label}: {a.curve()}" for a in attempts)
    site = ctx.locate.best(ctx.locate.of(ctx.subject.model))
    finding = CANNOT_OVERFIT.finding(
        **where(site),
        message=f"the loss on one batch of {samples} samples stops falling far from zero with {labels}: {curves}",
        samples=samples, steps=len(first.losses), optimizer=labels, curve=curves,
    )
    return Outcome([finding], detail=curves)
