"""TD495: optimizer steps as large as the weights they update (a learning rate far too large).

For the first STEPS steps of each optimizer from `torch.optim` (at most OPTIMIZERS of them), a
sample of each weight matrix it trains is copied before the step and compared after it. The
change's norm is divided by the sample's norm before the optimizer's first step: the scale the
weights were initialised at (a step measured against weights it has already blown up would
look smaller). The median over the matrices is the step's size; the mean over the steps is
judged. A step that large is not proof of harm on its own: a full-batch problem trained with
Adam at 0.03 on a wide layer steps by more than its weights' size and converges at once. So
the loss must show it too: the loss of the backward() before each of the optimizer's first
EVIDENCE steps is kept (a detached reference, no read), and the optimizer is reported only
when the losses computed after the measured steps are non-finite, or not below the first one
on average. Everything stays on the device until it is judged (at step EVIDENCE, or at the
end of a shorter run with at least one loss after the measured steps), read there in one go:
no per-step synchronisation, and nothing at all after it.

Where the threshold sits, measured with bench/mutation_bench.py: the 19 correct programs that
run there step by at most 0.36 of their weights' size (actor_critic: Adam at 0.03 on a
128-unit layer; the others 0.25 and less, most under 0.05); the same programs with a learning
rate 100 times larger step by 1.9 (minGPT) to 38 times it, except where the larger rate is
still no bug in effect (logistic regression at 0.1: 0.2) or a GAN's (0.4 to 0.7).
"""

from __future__ import annotations

import math
import weakref
from typing import TYPE_CHECKING, Any

import torch
from torch.optim.optimizer import Optimizer

from torchdoctor.observe.detector import Detector
from torchdoctor.observe.events import Backward, Step
from torchdoctor.observe.instruments.optim import params_of
from torchdoctor.observe.support import param_sample
from torchdoctor.rules.optimizer.learning_rate_too_large import RULE

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Observed

#: the steps measured, from each optimizer's first
STEPS = 3
#: the losses kept, one per step from the first: those after the STEPS measured steps are the evidence
EVIDENCE = 6
#: steps that move the weights by more than this multiple of their initial size, on average, are reported
TOO_LARGE = 1.0
#: the optimizers followed at once (a GAN has two)
OPTIMIZERS = 4
#: weight matrices sampled per optimizer, and the smallest counted (a toy 2x4 layer has no typical scale)
MATRICES = 32
MIN_ELEMENTS = 64


class _FirstSteps:
    """One optimizer's first steps: the matrices followed, their initial sizes, each step's changes."""

    def __init__(self, optimizer: Optimizer) -> None:
        matrices = [p for p in params_of(optimizer)
                    if p.requires_grad and p.dim() >= 2 and p.numel() >= MIN_ELEMENTS and p.layout == torch.strided]
        chosen = matrices[::max(1, len(matrices) // MATRICES)][:MATRICES]
        self.optimizer = weakref.ref(optimizer)
        self.params = [weakref.ref(p) for p in chosen]
        self.initial = [param_sample(p).float().norm() for p in chosen]  # on the device: read in _judge
        self.before: list[torch.Tensor | None] = []
        self.changes: list[list[torch.Tensor]] = []
        self.losses: list[torch.Tensor] = []  # the loss before each step, from the first
        self.size: float | None = None  # the measured steps' size, once they are all taken
        self.kept = 0  # the matrices that did not start at zero


class StepSize(Detector):
    rules = (RULE,)

    def __init__(self, ctx: Observed) -> None:
        super().__init__(ctx)
        self._followed: dict[int, _FirstSteps] = {}
        self._done: set[int] = set()
        self._loss: torch.Tensor | None = None  # the last backward()'s loss (a detached scalar)

    def on_backward(self, event: Backward) -> None:
        loss = event.tensors[0] if event.tensors else None
        self._loss = loss.detach() if isinstance(loss, torch.Tensor) and loss.numel() == 1 else None

    def on_step(self, event: Step) -> None:
        optimizer, key = event.optimizer, id(event.optimizer)
        if key in self._done or event.index > EVIDENCE:
            return
        steps = self._followed.get(key)
        if steps is not None and steps.optimizer() is optimizer and self._loss is not None:
            steps.losses.append(self._loss)
        if steps is not None and steps.size is not None:
            if len(steps.losses) >= EVIDENCE:
                self._judge(optimizer, steps)
            return
        if event.index > STEPS:
            return
        if steps is None or steps.optimizer() is not optimizer:
            if (event.closure or not type(optimizer).__module__.startswith("torch.optim.")
                    or len(self._followed) >= OPTIMIZERS):
                self._done.add(key)  # LBFGS-like steps, or an optimizer whose step size is unknown
                return
            with torch.no_grad():
                steps = _FirstSteps(optimizer)
            if not steps.params:
                self._done.add(key)
                return
            self._followed[key] = steps
            if self._loss is not None:
                steps.losses.append(self._loss)
        with torch.no_grad():
            steps.before = [None if (p := ref()) is None else param_sample(p).clone() for ref in steps.params]

    def on_step_end(self, event: Step) -> None:
        optimizer: Optimizer = event.optimizer
        steps = self._followed.get(id(optimizer))
        if steps is None or not steps.before or steps.optimizer() is not optimizer:
            return
        with torch.no_grad():
            steps.changes.append([(param_sample(p).float() - old.float()).norm() if (p := ref()) is not None and old is not None
                                  else torch.zeros(()) for ref, old in zip(steps.params, steps.before, strict=True)])
        steps.before = []
        if len(steps.changes) >= STEPS:
            steps.size = _size(steps)
            if steps.size is None or not steps.size > TOO_LARGE:
                self._stop(optimizer)

    def on_finish(self, outcome: Any) -> None:
        for steps in list(self._followed.values()):
            optimizer = steps.optimizer()
            if optimizer is not None and steps.size is not None:
                self._judge(optimizer, steps)  # a run shorter than EVIDENCE steps

    def _stop(self, optimizer: Optimizer) -> None:
        self._followed.pop(id(optimizer), None)
        self._done.add(id(optimizer))

    def _judge(self, optimizer: Optimizer, steps: _FirstSteps) -> None:
        """Report the measured steps when the losses after them show the harm."""
        self._stop(optimizer)
        with torch.no_grad():
            losses = [float(loss) for loss in torch.stack([loss.float().cpu() for loss in steps.losses])] if steps.losses else []
        first, after = losses[:1], losses[STEPS:]
        if not first or not after:
            return  # no loss computed after the measured steps: no evidence either way
        if all(math.isfinite(loss) for loss in after):
            mean = sum(after) / len(after)
            if mean < first[0]:
                return  # the loss fell: the large steps did not throw the training away
            evidence = f"the loss did not fall: {first[0]:.3g} at the first step, {mean:.3g} on average over steps {STEPS + 1}-{len(losses)}"
        else:
            evidence = f"the loss became non-finite by step {len(losses)} (it was {first[0]:.3g} at the first step)"
        info = self.ctx.optimizers.known.get(optimizer)
        rates = sorted({group["lr"] for group in optimizer.param_groups if isinstance(group.get("lr"), (int, float))})
        assert steps.size is not None
        self.ctx.report(RULE, at=info.created_at if info is not None and info.created_at else None,
                        fields={"steps": len(steps.changes), "optimizer": type(optimizer).__name__, "ratio": f"{steps.size:.2g}",
                                "matrices": int(steps.kept), "loss": evidence,
                                "lr": f"learning rate {', '.join(f'{rate:.3g}' for rate in rates)}" if rates else "its learning rate is not a number"})


def _size(steps: _FirstSteps) -> float | None:
    """The median matrix's change over its initial size, averaged over the measured steps
    (None when every matrix started at zero: no size to compare with)."""
    with torch.no_grad():
        initial = torch.stack([size.cpu() for size in steps.initial])
        kept = initial > 0
        steps.kept = int(kept.sum())
        if not steps.kept:
            return None
        changes = torch.stack([torch.stack([change.cpu() for change in step]) for step in steps.changes])
        return float((changes[:, kept] / initial[kept]).median(dim=1).values.mean())
