"""Loss functions: an observing stand-in for each `torch.nn.functional` loss.

The `nn` loss modules call these functions through `torch.nn.functional`, so one stand-in
covers `F.cross_entropy(...)` and `nn.CrossEntropyLoss()(...)` alike. The stand-in hands the
detectors the input and target before the loss runs (and, when a detector asks, the value it
returned) and changes nothing; under
torch.compile it steps aside.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

from torchdoctor.observe.events import LossCall
from torchdoctor.observe.instruments.compiled import traced
from torchdoctor.observe.patching import Patches, observed

#: the losses observed: every one takes (input, target, ...) first
LOSSES = (
    "cross_entropy",
    "nll_loss",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "mse_loss",
    "l1_loss",
    "smooth_l1_loss",
    "huber_loss",
    "kl_div",
    "poisson_nll_loss",
)


def install(patches: Patches, on_loss: Callable[[LossCall], None],
            on_loss_end: Callable[[LossCall], None] | None = None) -> None:
    for name in LOSSES:
        original = getattr(F, name, None)
        if original is None:
            continue
        returned = _returner(name, on_loss_end) if on_loss_end is not None else None
        patches.set(F, name, observed(original, _caller(name, on_loss), skip=traced, returned=returned))


def _returner(name: str, on_loss_end: Callable[[LossCall], None]) -> Callable[[tuple[Any, ...], dict[str, Any], Any], None]:
    def returned(args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> None:
        input_ = args[0] if args else kwargs.get("input")
        target = args[1] if len(args) > 1 else kwargs.get("target")
        if isinstance(input_, torch.Tensor) and isinstance(result, torch.Tensor):
            on_loss_end(LossCall(name, input_, target, args, kwargs, result))

    return returned


def _caller(name: str, on_loss: Callable[[LossCall], None]) -> Callable[[tuple[Any, ...], dict[str, Any]], None]:
    def before(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        input_ = args[0] if args else kwargs.get("input")
        target = args[1] if len(args) > 1 else kwargs.get("target")
        if isinstance(input_, torch.Tensor):
            on_loss(LossCall(name, input_, target, args, kwargs))

    return before
