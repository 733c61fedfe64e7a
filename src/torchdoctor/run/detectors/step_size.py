"""TD495: optimizer steps as large as the weights they update (a learning rate far too large).

For the first STEPS steps of each optimizer from `torch.optim` (at most OPTIMIZERS of them), a
sample of each weight matrix it trains is copied before the step and compared after it. The
change's norm is divided by the sample's norm before the optimizer's first step: the scale the
weights were initialised at (a step measured against weights it has already blown up would
look smaller). The median over the matrices is the step's size; the mean over the steps is
judged. Everything stays on the device until the last of those steps, read there in one go:
no per-step synchronisation, and nothing at all after it.

Where the threshold sits, measured with bench/mutation_bench.py: the 19 correct programs that
run there step by at most 0.36 of their weights' size (actor_critic: Adam at 0.03 on a
128-unit layer; the others 0.25 and less, most under 0.05); the same programs with a learning
rate 100 times larger step by 1.9 (minGPT) to 38 times it, except where the larger rate is
still no bug in effect (logistic regression at 0.1: 0.2) or a GAN's (0.4 to 0.7).
"""

from __future__ import annotations

import weakref
from typing import Any

import torch
from torch.optim.optimizer import Optimizer

from torchdoctor.rules.optimizer.learning_rate_too_large import RULE
from torchdoctor.run.detector import Detector
from torchdoctor.run.detectors.support import param_sample
from torchdoctor.run.events import Step
from torchdoctor.run.instruments.optim import params_of

#: the steps measured, from each optimizer's first
STEPS = 3
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


class StepSize(Detector):
    rules = (RULE,)

    def __init__(self, ctx: Any) -> None:
        super().__init__(ctx)
        self._followed: dict[int, _FirstSteps] = {}
        self._done: set[int] = set()

    def on_step(self, event: Step) -> None:
        optimizer, key = event.optimizer, id(event.optimizer)
        if key in self._done or event.index > STEPS:
            return
        steps = self._followed.get(key)
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
            del self._followed[id(optimizer)]
            self._done.add(id(optimizer))
            self._judge(optimizer, steps)

    def _judge(self, optimizer: Optimizer, steps: _FirstSteps) -> None:
        with torch.no_grad():
            initial = torch.stack([size.cpu() for size in steps.initial])
            kept = initial > 0  # a matrix that starts at zero has no size to compare with
            if not bool(kept.any()):
                return
            changes = torch.stack([torch.stack([change.cpu() for change in step]) for step in steps.changes])
            size = float((changes[:, kept] / initial[kept]).median(dim=1).values.mean())
        if not size > TOO_LARGE:
            return
        info = self.ctx.optimizers.known.get(optimizer)
        rates = sorted({group["lr"] for group in optimizer.param_groups if isinstance(group.get("lr"), (int, float))})
        self.ctx.report(RULE, at=info.created_at if info is not None and info.created_at else None,
                        fields={"steps": len(steps.changes), "optimizer": type(optimizer).__name__, "ratio": f"{size:.2g}",
                                "matrices": int(kept.sum()),
                                "lr": f"learning rate {', '.join(f'{rate:.3g}' for rate in rates)}" if rates else "its learning rate is not a number"})
