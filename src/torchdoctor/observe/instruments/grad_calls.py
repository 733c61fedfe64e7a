"""`torch.autograd.grad` calls: gradients computed without backward() (input gradients,
gradient penalties, adversarial examples), which use a graph just as backward() does."""

from __future__ import annotations

from typing import Any

import torch

from torchdoctor.observe.instruments.compiled import traced
from torchdoctor.observe.patching import Patches, observed


class GradCalls:
    """How many times `torch.autograd.grad` was called."""

    def __init__(self) -> None:
        self.calls = 0

    def install(self, patches: Patches) -> None:
        patches.set(torch.autograd, "grad", observed(torch.autograd.grad, self._called, skip=traced))

    def _called(self, _args: tuple[Any, ...], _kwargs: dict[str, Any]) -> None:
        self.calls += 1
