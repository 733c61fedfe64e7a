"""The order in which training loaders visit their samples.

TD141: a DistributedSampler iterated again with the same epoch (no `set_epoch`).
TD451: a training DataLoader that never shuffles, over samples sorted by label.

A loader counts as a training loader once one of its batches is followed by an optimizer
step (validation loaders may keep a fixed order). The labels of non-shuffling training
loaders are read during their first epoch only, on the CPU, before they move to a device.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
from torch.utils.data import BatchSampler, DataLoader, IterableDataset, SequentialSampler
from torch.utils.data.distributed import DistributedSampler

from torchdoctor.core.locate import caller_in_user_code
from torchdoctor.observe.detector import Detector
from torchdoctor.observe.events import Batch, LoaderIter, Location, Step
from torchdoctor.observe.instruments.loader_sites import LoaderSites
from torchdoctor.observe.outcome import Outcome
from torchdoctor.rules.data.training_data_not_shuffled import RULE as NOT_SHUFFLED
from torchdoctor.rules.distributed.sampler_without_set_epoch import RULE as SAMPLER_EPOCH

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Observed

LABEL_KEYS = ("label", "labels", "target", "targets", "y")


@dataclass
class LabelOrder:
    """Whether the labels of a loader's first epoch come sorted (one direction, no way back)."""

    directions: set[int] = field(default_factory=lambda: {1, -1})
    last: int | None = None
    low: int | None = None
    high: int | None = None
    labels: int = 0
    batches: int = 0
    run: int = 0  # labels since the last change of value
    first_run: int = 0  # length of the first run of equal labels
    decided: bool = False

    @property
    def broken(self) -> bool:
        return not self.directions

    def add(self, labels: torch.Tensor) -> None:
        values = labels.tolist()  # a CPU tensor of one batch's labels
        for value in values:
            if self.last is not None and value != self.last:
                self.directions.discard(-1 if value > self.last else 1)
                if self.first_run == 0:
                    self.first_run = self.run
                self.run = 0
            self.run += 1
            self.last = value
        self.low = min(values) if self.low is None else min(self.low, *values)
        self.high = max(values) if self.high is None else max(self.high, *values)
        self.labels += len(values)
        self.batches += 1

    def sorted(self, batch_size: int) -> bool:
        """Sorted: at least two labels, each in one long run (a full batch at least), never
        going back; random orders break this within a few batches."""
        return (
            not self.broken and self.low != self.high and self.batches >= LoaderOrder.MIN_BATCHES
            and self.first_run >= batch_size and self.run >= batch_size
        )


def labels_of(batch: Any) -> torch.Tensor | None:
    """The class labels of a `(inputs, labels)` batch or a dict batch: 1-D integer CPU tensors."""
    if isinstance(batch, (tuple, list)) and len(batch) >= 2:
        labels = batch[-1]
    elif isinstance(batch, dict):
        labels = next((batch[k] for k in LABEL_KEYS if k in batch), None)
    else:
        return None
    if (
        not isinstance(labels, torch.Tensor) or labels.dim() != 1 or labels.numel() < 2 or labels.device.type != "cpu"
        or labels.dtype in (torch.bool, torch.uint8) or labels.is_floating_point() or labels.is_complex()
    ):
        return None
    return labels


def distributed_sampler(loader: DataLoader[Any]) -> DistributedSampler[Any] | None:
    for sampler in (getattr(loader, "sampler", None), getattr(getattr(loader, "batch_sampler", None), "sampler", None)):
        if isinstance(sampler, DistributedSampler):
            return sampler
    return None


def never_shuffles(loader: DataLoader[Any]) -> bool:
    """A map-style loader with the default sequential order (`shuffle=False`, no sampler)."""
    return (
        not isinstance(loader.dataset, IterableDataset) and isinstance(loader.sampler, SequentialSampler)
        and isinstance(loader.batch_sampler, BatchSampler) and loader.batch_sampler.sampler is loader.sampler
    )


@dataclass
class SamplerEpochs:
    """The epochs a DistributedSampler had at the start of each iteration of its loader."""

    seen: set[Any] = field(default_factory=set)  # every epoch any iteration started with
    trained: list[Any] = field(default_factory=list)  # epochs of the iterations that trained
    current: Any = None
    current_trained: bool = False
    location: Location | None = None

    def start(self, epoch: Any, location: Location | None) -> None:
        if self.current_trained:
            self.trained.append(self.current)
        self.current, self.current_trained, self.location = epoch, False, location
        self.seen.add(epoch)

    def repeated(self) -> bool:
        """A second training iteration with the same epoch, and `set_epoch` never changed it
        (a second pass over the training set to evaluate it is not an epoch of its own)."""
        return bool(self.trained) and len(self.seen) == 1


class LoaderOrder(Detector):
    """TD141 and TD451: the order in which training loaders visit their samples.

    A loader counts as a training loader once one of its batches is followed by an optimizer
    step (validation loaders may keep a fixed order).
    """

    ORDER = 240
    rules = (SAMPLER_EPOCH, NOT_SHUFFLED)
    #: labels looked at, at most, before deciding whether a non-shuffling loader is sorted
    MAX_LABELS = 4096
    MIN_BATCHES = 4

    def __init__(self, ctx: Observed) -> None:
        super().__init__(ctx)
        self._last_loader: weakref.ref[DataLoader[Any]] | None = None
        self._training: weakref.WeakSet[DataLoader[Any]] = weakref.WeakSet()
        self._samplers: weakref.WeakKeyDictionary[Any, SamplerEpochs] = weakref.WeakKeyDictionary()
        self._orders: weakref.WeakKeyDictionary[DataLoader[Any], LabelOrder] = weakref.WeakKeyDictionary()
        self._loops: weakref.WeakKeyDictionary[DataLoader[Any], Location | None] = weakref.WeakKeyDictionary()
        self._sites: LoaderSites | None = None

    def install(self) -> None:
        self._sites = self.ctx.instrument(LoaderSites)

    def on_loader_iter(self, event: LoaderIter) -> None:
        loader = event.loader
        self._conclude(loader)
        self._check_epoch(loader)
        if event.index == 1 and never_shuffles(loader):
            self._orders[loader] = LabelOrder()
            self._loops[loader] = caller_in_user_code()

    def on_batch(self, event: Batch) -> None:
        loader = event.loader
        if self._last_loader is None or self._last_loader() is not loader:
            self._last_loader = weakref.ref(loader)
        order = self._orders.get(loader)
        if order is None or order.decided or order.broken:
            return
        labels = labels_of(event.batch)
        if labels is None:
            order.decided = True
            return
        order.add(labels)
        if order.labels >= self.MAX_LABELS:
            self._conclude(loader)

    def on_step_end(self, event: Step) -> None:
        loader = self._last_loader() if self._last_loader is not None else None
        if loader is None:
            return
        self._training.add(loader)
        sampler = distributed_sampler(loader)
        epochs = self._samplers.get(sampler) if sampler is not None else None
        if epochs is not None and not epochs.current_trained:
            epochs.current_trained = True
            if epochs.repeated():
                self._report_epoch(sampler, epochs)

    def on_finish(self, outcome: Outcome) -> None:
        for loader in list(self._orders.keys()):
            self._conclude(loader)

    def _check_epoch(self, loader: DataLoader[Any]) -> None:
        """A new iteration of a loader with a shuffling DistributedSampler: remember its epoch."""
        sampler = distributed_sampler(loader)
        if sampler is None or not getattr(sampler, "shuffle", False):
            return
        epochs = self._samplers.get(sampler)
        if epochs is None:
            epochs = self._samplers[sampler] = SamplerEpochs()
        epochs.start(getattr(sampler, "epoch", None), caller_in_user_code())

    def _report_epoch(self, sampler: Any, epochs: SamplerEpochs) -> None:
        epoch = epochs.current
        evidence = {"epoch": epoch, "training_epochs": len(epochs.trained) + 1}
        sampler_said = "(its epoch is still 0)" if epoch == 0 else f"(its epoch stays at {epoch})"
        self.ctx.report(SAMPLER_EPOCH, at=epochs.location, key=id(sampler), fields={"sampler": sampler_said},
                        variant=None if epoch == 0 else "same-epoch", evidence=evidence)

    def _conclude(self, loader: DataLoader[Any]) -> None:
        order = self._orders.get(loader)
        if order is None or order.decided:
            return
        order.decided = True
        batch_size = loader.batch_size or 1
        if loader not in self._training or not order.sorted(batch_size):
            return
        site = self._sites.of(loader) if self._sites is not None else None
        self.ctx.report(
            NOT_SHUFFLED, at=site or self._loops.get(loader), key=id(loader),
            fields={"labels": order.labels, "low": order.low, "high": order.high},
            evidence={"labels_seen": order.labels, "first_run": order.first_run},
        )
