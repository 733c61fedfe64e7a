"""One batch to check with, and how the model and loss are called on it.

The data is a DataLoader (its first batch is taken the way training takes it, and a few more
are timed for the throughput check) or one batch `(inputs, targets)`. Inputs are passed as
`model(x)`, `model(*x)` for a tuple or list, `model(**x)` for a dict.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils.data import DataLoader

from torchdoctor.health.timing import one_thread, reference_seconds
from torchdoctor.introspect.tensors import map_tree, tensors_in

#: batches timed once the batches already in flight (num_workers x prefetch_factor) are drained
PROBE_BATCHES = 5
#: a safety net only: the probe stops after this long, and the report says so
PROBE_MAX_SECONDS = 30.0


@dataclass
class LoaderTimes:
    """Seconds to the first batch (worker start-up included) and for each batch timed after the
    batches already in flight were drained (the loader's own pace, not its prefetch queue), and
    the reference work's seconds measured beside them (see timing.py)."""

    first: float
    later: list[float] = field(default_factory=list)
    reference: float = 0.0
    capped: bool = False  # PROBE_MAX_SECONDS ended the probe before its batches were timed

    @property
    def per_batch(self) -> float | None:
        """The fastest batch after the first (see timing.py: the loader's own pace, whatever the
        machine's load; None when no later batch was timed)."""
        return min(self.later) if self.later else None


@dataclass
class Batch:
    """The inputs and targets under check (the caller's tensors are never handed out)."""

    inputs: Any
    targets: Any
    loader_times: LoaderTimes | None = None

    @property
    def size(self) -> int | None:
        """The batch size, when dim 0 of inputs and targets agree on one (None for an unbatched
        sample, such as a DataLoader with batch_size=None gives: a 0-d target)."""
        tensors = tensors_in(self.inputs) + tensors_in(self.targets)
        if not tensors or any(t.dim() == 0 for t in tensors):
            return None
        sizes = {t.shape[0] for t in tensors}
        return sizes.pop() if len(sizes) == 1 else None

    def fresh(self) -> tuple[Any, Any]:
        """Clones of inputs and targets, so a model that writes into its input harms nothing."""
        return clone_tree(self.inputs), clone_tree(self.targets)

    def head(self, count: int) -> Batch:
        """The first `count` samples (the same batch when dim 0 is not clearly the batch)."""
        size = self.size
        if size is None or size <= count:
            return self
        return Batch(slice_tree(self.inputs, count, size), slice_tree(self.targets, count, size))


class DataError(ValueError):
    """The data is not a DataLoader or a batch (inputs, targets)."""


def describe(obj: Any) -> str:
    return type(obj).__name__ if not isinstance(obj, torch.Tensor) else f"Tensor{tuple(obj.shape)}"


def split(batch: Any) -> tuple[Any, Any]:
    """(inputs, targets) from one batch as a loader or the caller gives it."""
    if isinstance(batch, (tuple, list)):
        if len(batch) == 0:
            raise DataError("the batch is empty")
        return batch[0], (batch[1] if len(batch) > 1 else None)
    if isinstance(batch, (torch.Tensor, dict)):
        return batch, None
    raise DataError(f"a batch must be (inputs, targets) or a tensor, got {describe(batch)}")


def first_batch(data: Any, max_workers: int | None = None) -> Batch:
    """The batch to check with; a DataLoader is iterated once, like training does (in this
    process instead, unmeasured, when it asks for more than `max_workers` workers)."""
    if isinstance(data, DataLoader):
        if max_workers is not None and data.num_workers > max_workers:
            single = copy.copy(data)
            single.num_workers = 0
            for batch in single:
                inputs, targets = split(batch)
                return Batch(inputs, targets)
            raise DataError("the DataLoader yields no batch (is the dataset empty?)")
        reference = reference_seconds()
        started = time.perf_counter()
        iterator = iter(data)
        try:
            try:
                batch = next(iterator)
            except StopIteration:
                raise DataError("the DataLoader yields no batch (is the dataset empty?)") from None
            times = LoaderTimes(first=time.perf_counter() - started, reference=reference)
            _probe(iterator, times, in_flight=data.num_workers * (data.prefetch_factor or 2) if data.num_workers else 0)
        finally:
            del iterator  # shuts down the worker processes
        inputs, targets = split(batch)
        return Batch(inputs, targets, times)
    inputs, targets = split(data)
    return Batch(inputs, targets)


def _probe(iterator: Any, times: LoaderTimes, in_flight: int) -> None:
    """Take the `in_flight` batches the workers prefetched, then time PROBE_BATCHES more: a
    number of batches, not of seconds (PROBE_MAX_SECONDS is a safety net), on one thread as the
    training step they are compared with (see timing.py)."""
    started = time.perf_counter()
    wanted = in_flight + PROBE_BATCHES
    with one_thread():
        _take(iterator, times, in_flight, wanted, started)


def _take(iterator: Any, times: LoaderTimes, in_flight: int, wanted: int, started: float) -> None:
    for index in range(wanted):
        before = time.perf_counter()
        try:
            next(iterator)
        except StopIteration:
            return
        now = time.perf_counter()
        if index >= in_flight:
            times.later.append(now - before)
        if now - started > PROBE_MAX_SECONDS and index + 1 < wanted:
            times.capped = True
            return


def scalar_loss(loss_fn: Callable[..., Any], model: Callable[..., Any], inputs: Any, targets: Any) -> torch.Tensor:
    """The loss of one forward pass as one number (a loss with reduction='none' is averaged)."""
    loss = loss_fn(call_model(model, inputs), targets)
    return loss if loss.dim() == 0 else loss.float().mean()


def call_model(model: Callable[..., Any], inputs: Any) -> Any:
    if isinstance(inputs, dict):
        return model(**inputs)
    if isinstance(inputs, (tuple, list)):
        return model(*inputs)
    return model(inputs)


def primary_output(output: Any) -> torch.Tensor | None:
    """The tensor that stands for the model's prediction (logits first, then the first tensor)."""
    if isinstance(output, torch.Tensor):
        return output
    logits = output.get("logits") if isinstance(output, dict) else getattr(output, "logits", None)
    if isinstance(logits, torch.Tensor):
        return logits
    found = tensors_in(output)
    return found[0] if found else None


def clone_tree(tree: Any) -> Any:
    return map_tree(tree, lambda t: t.detach().clone())


def slice_tree(tree: Any, count: int, size: int) -> Any:
    return map_tree(tree, lambda t: t[:count] if t.dim() > 0 and t.shape[0] == size else t)


def nbytes(tree: Any) -> int:
    return sum(t.element_size() * t.nelement() for t in tensors_in(tree))
