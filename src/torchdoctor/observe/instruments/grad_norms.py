"""The norm of each parameter's gradient at an optimizer step, computed once per step for
every detector that needs it (one fused `_foreach_norm`, CPU parameters only: reading a GPU
gradient's norm back every step would synchronise with the device)."""

from __future__ import annotations

from typing import Any

import torch
from torch.optim.optimizer import Optimizer

from torchdoctor.observe.instruments.optim import params_of
from torchdoctor.observe.patching import Patches


class GradNorms:
    """`at_step(optimizer, step)`: (parameters with a gradient, their gradient norms) or None."""

    def __init__(self) -> None:
        self._key: tuple[int, int] | None = None
        self._value: tuple[list[torch.Tensor], torch.Tensor] | None = None

    def install(self, patches: Patches) -> None:
        """Nothing to patch: computed on request."""

    def at_step(self, optimizer: Optimizer, step: int) -> tuple[list[torch.Tensor], torch.Tensor] | None:
        key = (id(optimizer), step)
        if key != self._key:
            self._key, self._value = key, _norms(optimizer)
        return self._value

    def now(self, optimizer: Optimizer) -> tuple[list[torch.Tensor], torch.Tensor] | None:
        """Measured afresh, not cached: after a `step(closure)`, whose closure made the gradients
        inside the step (at `on_step` they were still the previous step's)."""
        return _norms(optimizer)


def _norms(optimizer: Optimizer) -> tuple[list[torch.Tensor], torch.Tensor] | None:
    params = [p for p in params_of(optimizer) if _dense(p.grad)]
    if not params or any(p.grad.device.type != "cpu" for p in params):  # type: ignore[union-attr]
        return None
    grads: list[Any] = [p.grad for p in params]
    return params, torch.stack(torch._foreach_norm(grads)).float()


def _dense(grad: torch.Tensor | None) -> bool:
    return grad is not None and grad.is_floating_point() and not grad.is_sparse
