"""One batch to check with, and how the model and loss are called on it.

The data is a DataLoader (its first batch is taken the way training takes it, and the next few
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

from torchdoctor.introspect.tensors import map_tree, tensors_in

#: how long the loader probe may spend on batches after the first, and how many it takes
PROBE_SECONDS = 1.0
PROBE_BATCHES = 3


@dataclass
class LoaderTimes:
    """Seconds to the first batch (worker start-up included) and for each later batch."""

    first: float
    later: list[float] = field(default_factory=list)

    @property
    def per_batch(self) -> float | None:
        """The median time per batch after the first (None when only one batch was seen)."""
        if not self.later:
            return None
        ordered = sorted(self.later)
        return ordered[len(ordered) // 2]


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
        started = time.perf_counter()
        iterator = iter(data)
        try:
            try:
                batch = next(iterator)
            except StopIteration:
                raise DataError("the DataLoader yields no batch (is the dataset empty?)") from None
            times = LoaderTimes(first=time.perf_counter() - started)
            _probe(iterator, times)
        finally:
            del iterator  # shuts down the worker processes
        inputs, targets = split(batch)
        return Batch(inputs, targets, times)
    inputs, targets = split(data)
    return Batch(inputs, targets)


def _probe(iterator: Any, times: LoaderTimes) -> None:
    deadline = time.perf_counter() + PROBE_SECONDS
    for _ in range(PROBE_BATCHES):
        started = time.perf_counter()
        try:
            next(iterator)
        except StopIteration:
            return
        times.later.append(time.perf_counter() - started)
        if time.perf_counter() > deadline:
            return


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
