"""Whether a class loss's targets are wrong (a float or out-of-range target): the loss check
reports it, and the forward check stays quiet about a failure it explains."""

from __future__ import annotations

import torch

from torchdoctor.health.context import CLASS_LOSSES, TrainPass
from torchdoctor.health.tracer import LossCall

# float class targets of a different shape than the input, or integer targets other than
# int64/uint8, make cross_entropy/nll_loss raise
ACCEPTED_INDEX_DTYPES = (torch.int64, torch.uint8)


def class_target_findings_possible(tp: TrainPass) -> bool:
    """Whether a failed class loss is explained by its targets (so TD301 stays quiet)."""
    return any(target_problem(call) for call in tp.records.losses if call.name in CLASS_LOSSES)


def target_problem(call: LossCall) -> str | None:
    target, logits = call.target, call.input
    if not isinstance(target, torch.Tensor) or not isinstance(logits, torch.Tensor):
        return None
    if target.is_floating_point():
        return None if target.shape == logits.shape else "dtype"
    if target.dtype not in ACCEPTED_INDEX_DTYPES:
        return "dtype"
    classes = class_count(logits)
    ignore = call.kwargs.get("ignore_index", -100)
    valid = (target == ignore) | ((target >= 0) & (target < classes))
    return None if bool(valid.all()) else "range"


def class_count(logits: torch.Tensor) -> int:
    return logits.shape[1] if logits.dim() >= 2 else logits.shape[0]
