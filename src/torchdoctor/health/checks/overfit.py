"""Overfit one small batch: the loss should halve within a bounded number of steps (TD304).

It trains a fresh copy with the user's optimizer. Halving passes; a loss still falling when
the budget runs out is inconclusive (slow is not broken); a loss that has stopped falling far
from its start fails. Then it retries with Adam(lr=1e-3), to tell "the optimizer settings
barely move the model" (info) from "this model and loss cannot learn even one batch"
(warning).

The budget is a number of steps, never a number of seconds, so that the same code gets the
same verdict on an idle and on a busy machine: `overfit_steps` (300), fewer for a model whose
step costs more than `FLOP_BUDGET / overfit_steps` (the floating-point operations of one step
are counted, not timed). A time cap (`overfit_max_seconds`) is only a safety net against a
model far slower than its operation count says; when it fires, the result is inconclusive
and the report says so in a notice.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils.flop_counter import FlopCounterMode

from torchdoctor.core.finding import Severity
from torchdoctor.health.batch import Batch, scalar_loss
from torchdoctor.health.context import CheckContext
from torchdoctor.health.outcome import Outcome
from torchdoctor.introspect.sites import where
from torchdoctor.rules.optimizer.cannot_overfit_batch import RULE as CANNOT_OVERFIT

NAME = "overfit"
ORDER = 100  # its place in the report (core/plugins.py)
TITLE = "one small batch can be overfitted"
#: what the check does, in its row of docs/check.md's table (`python -m torchdoctor.dev generate`)
DOES = (
    "trains on one batch of up to 8 samples for up to 300 steps with your optimizer: halving passes, a "
    "loss still falling is inconclusive, a loss stuck far from zero fails (and is retried with "
    "`Adam(lr=1e-3)`, to tell a bad learning rate from a broken model). The budget is steps, fewer for a "
    "model whose step costs more than 1/300 of 100 GFLOP (operations are counted, not timed), so a busy "
    "machine gets the same verdict; the detail says how long it took. A 120 s time cap per attempt is "
    "only a safety net: when it fires, the check is inconclusive and a `note:` says so"
)
RULES = (CANNOT_OVERFIT.code,)

#: the loss must fall to this fraction of its first value
TARGET = 0.5
#: below this fall over the last third of the steps (relative to the first loss), it is stuck
PLATEAU = 0.02
MIN_STEPS_FOR_VERDICT = 30
#: floating-point operations one attempt may spend (a few seconds of a CPU): a model whose
#: step on the small batch costs more gets fewer steps than `overfit_steps`, never fewer than MIN_STEPS
FLOP_BUDGET = 100e9
MIN_STEPS = 2


@dataclass
class Attempt:
    label: str
    losses: list[float] = field(default_factory=list)
    error: str | None = None
    seconds: float = 0.0
    capped: bool = False  # the time cap ended it before its steps were done

    def took(self) -> str:
        """How long it took, for the detail (never in a finding's message: that must not vary)."""
        return f" in {self.seconds:.2f} s"

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


@dataclass(frozen=True)
class Budget:
    """How many steps an attempt may take, and why that many (said in the report)."""

    steps: int
    flops: float | None  # per step, counted on the batch (None: could not be counted)
    max_seconds: float

    @property
    def reason(self) -> str:
        if self.flops is None:
            return ""
        return f"{self.steps} steps of {_flops(self.flops)} each is as many as the check's {_flops(FLOP_BUDGET)} allow"


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
    budget = budget_for(ctx, batch)
    users = ctx.subject.optimizer is not None
    first = _attempt(ctx, batch, budget, use_own_optimizer=users)
    if first.capped:
        return _capped(first, budget)
    if first.succeeded:
        return Outcome(detail=f"{first.label}: loss {first.curve(3)}{first.took()}")
    if not first.plateaued:
        limited = f"; {budget.reason}" if len(first.losses) == budget.steps < ctx.options.overfit_steps else ""
        return Outcome(detail=f"inconclusive: with {first.label} the loss is still falling: {first.curve(3)}{first.took()}{limited}")
    if not users or _is_fallback(ctx.subject.optimizer):
        return _report(ctx, batch, first, None)
    second = _attempt(ctx, batch, budget, use_own_optimizer=False)
    if second.capped:
        return _capped(second, budget)
    if not second.succeeded and not second.plateaued:
        return _report(ctx, batch, first, second, still_falling=True)
    return _report(ctx, batch, first, second)


def budget_for(ctx: CheckContext, batch: Batch) -> Budget:
    """`overfit_steps`, or fewer for a model whose step costs more than FLOP_BUDGET allows."""
    steps, cap = ctx.options.overfit_steps, ctx.options.overfit_max_seconds
    flops = count_step_flops(ctx, batch)
    if flops is None or flops <= 0:
        return Budget(steps, None, cap)
    return Budget(min(steps, max(MIN_STEPS, int(FLOP_BUDGET // flops))), flops, cap)


def count_step_flops(ctx: CheckContext, batch: Batch) -> float | None:
    """The floating-point operations of one training step on `batch` (forward, loss, backward),
    counted by torch's FlopCounterMode on a copy; at least 6 per parameter and sample (an
    operation torch has no count for, such as a fused LSTM, counts 0 there). None when the
    counted step fails (the attempt itself will say why)."""
    copies = ctx.copies()
    model = copies.model
    loss_fn = copies.loss_fn if copies.loss_fn is not None else ctx.loss_call(ctx.train_pass())
    model.train()
    inputs, targets = batch.fresh()
    try:
        with torch.enable_grad(), FlopCounterMode(display=False) as counter:
            scalar_loss(loss_fn, model, inputs, targets).backward()  # type: ignore[arg-type]
    except Exception:  # noqa: BLE001 - counting is best effort
        return None
    parameters = sum(p.numel() for p in model.parameters() if p.requires_grad)
    return float(max(counter.get_total_flops(), 6 * parameters * (batch.size or 1)))


def _attempt(ctx: CheckContext, batch: Batch, budget: Budget, use_own_optimizer: bool) -> Attempt:
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
    started = time.perf_counter()
    with torch.enable_grad():
        for _ in range(budget.steps):
            try:
                optimizer.zero_grad(set_to_none=True)
                loss = scalar_loss(loss_fn, model, inputs, targets)
                value = float(loss)
                attempt.losses.append(value)
                if not math.isfinite(value) or attempt.succeeded:
                    break
                loss.backward()
                optimizer.step()
            except Exception as exc:
                attempt.error = f"training raised {type(exc).__name__}: {exc}"
                break
            if time.perf_counter() - started > budget.max_seconds:
                attempt.capped = len(attempt.losses) < budget.steps
                break
    attempt.seconds = time.perf_counter() - started
    return attempt


def _capped(attempt: Attempt, budget: Budget) -> Outcome:
    """The safety net fired: whatever the curve says, it depends on this machine's speed."""
    said = (f"the overfit check stopped at its time cap of {budget.max_seconds:g} s after {len(attempt.losses)} of its "
            f"{budget.steps} steps (with {attempt.label}), so its result is inconclusive and no TD304 is reported: "
            "the machine is busy, or the model is far slower than its operation count says; rerun on a quieter "
            "machine, with fewer --overfit-steps, or with a larger overfit_max_seconds")
    return Outcome(detail=f"inconclusive: stopped by the {budget.max_seconds:g} s time cap after "
                          f"{len(attempt.losses)} of {budget.steps} steps ({attempt.curve(3)})", notices=[said])


def _flops(count: float) -> str:
    for unit, size in (("GFLOP", 1e9), ("MFLOP", 1e6), ("kFLOP", 1e3)):
        if count >= size:
            return f"{count / size:.3g} {unit}"
    return f"{count:.0f} FLOP"


def _is_fallback(optimizer: torch.optim.Optimizer | None) -> bool:
    """The user's optimizer is already what the retry would use."""
    if optimizer is None or type(optimizer) not in (torch.optim.Adam, torch.optim.AdamW):
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
        site = ctx.locate.best(ctx.locate.of(ctx.subject.optimizer))
        finding = CANNOT_OVERFIT.finding(**where(site), severity=Severity.INFO, evidence=_evidence([first, second]),
                                         variant="adam-overfits" if second.succeeded else "adam-still-falling",
                                         fields={"samples": samples, "optimizer": first.label, "curve": first.curve(),
                                                 "adam_curve": second.curve(3)})
        return Outcome([finding], detail=f"{first.label} is slow; Adam(lr=0.001) overfits")
    attempts = [first] + ([second] if second is not None else [])
    labels = " nor ".join(a.label for a in attempts) if len(attempts) > 1 else first.label
    curves = first.curve() if len(attempts) == 1 else "; ".join(f"{a.label}: {a.curve()}" for a in attempts)
    site = ctx.locate.best(ctx.locate.of(ctx.subject.model))
    finding = CANNOT_OVERFIT.finding(
        **where(site),
        fields={"samples": samples, "optimizer": labels, "curve": curves},
        evidence=_evidence(attempts),
    )
    return Outcome([finding], detail=curves)


def _evidence(attempts: list[Attempt]) -> dict[str, Any]:
    """Steps and seconds of each attempt (the time is evidence, never part of the message)."""
    return {"attempts": [{"optimizer": a.label, "steps": len(a.losses), "seconds": round(a.seconds, 3)} for a in attempts]}
