"""What the training data looks like on its way into the model.

TD141: a DistributedSampler iterated again with the same epoch (no `set_epoch`).
TD451: a training DataLoader that never shuffles, over samples sorted by label.
TD140: random generators stored on the dataset, identical in every worker process.
TD450: raw 0..255 pixel values reaching the first convolution.

Batches are looked at only where it is cheap and needed: labels of non-shuffling training
loaders during their first epoch (on the CPU, before they move to a device), the input of the
first convolution during the warm-up steps, and each worker's generators around its first
fetch (in the worker).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import shutil
import tempfile
import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.utils.data import BatchSampler, DataLoader, IterableDataset, SequentialSampler
from torch.utils.data.distributed import DistributedSampler

from torchdoctor.check.isolation import rng_objects
from torchdoctor.check.sites import attribute_site
from torchdoctor.core.locate import caller_in_user_code
from torchdoctor.rules.data.rng_copied_into_workers import RULE as RNG_COPIED
from torchdoctor.rules.data.training_data_not_shuffled import RULE as NOT_SHUFFLED
from torchdoctor.rules.data.unnormalized_image_input import RULE as RAW_PIXELS
from torchdoctor.rules.distributed.sampler_without_set_epoch import RULE as SAMPLER_EPOCH
from torchdoctor.run.detector import Detector
from torchdoctor.run.detectors.support import place
from torchdoctor.run.events import Batch, LoaderIter, Location, ModuleCall, Step
from torchdoctor.run.instruments.loader_sites import LoaderSites
from torchdoctor.run.instruments.worker_fetch import FirstFetch
from torchdoctor.run.outcome import Outcome
from torchdoctor.run.records import ENV_DIR

LABEL_KEYS = ("label", "labels", "target", "targets", "y")


# --- the order of training samples -------------------------------------------------------


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


class LoaderOrder(Detector):
    """TD141 and TD451: the order in which training loaders visit their samples.

    A loader counts as a training loader once one of its batches is followed by an optimizer
    step (validation loaders may keep a fixed order).
    """

    rules = (SAMPLER_EPOCH, NOT_SHUFFLED)
    #: labels looked at, at most, before deciding whether a non-shuffling loader is sorted
    MAX_LABELS = 4096
    MIN_BATCHES = 4

    def __init__(self, ctx: Any) -> None:
        super().__init__(ctx)
        self._last_loader: weakref.ref[DataLoader[Any]] | None = None
        self._training: weakref.WeakSet[DataLoader[Any]] = weakref.WeakSet()
        self._epochs: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
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
        if loader is not None:
            self._training.add(loader)

    def on_finish(self, outcome: Outcome) -> None:
        for loader in list(self._orders.keys()):
            self._conclude(loader)

    def _check_epoch(self, loader: DataLoader[Any]) -> None:
        sampler = distributed_sampler(loader)
        if sampler is None or not getattr(sampler, "shuffle", False):
            return
        epoch = getattr(sampler, "epoch", None)
        previous = self._epochs.get(sampler)
        if isinstance(epoch, int):
            self._epochs[sampler] = epoch
        if previous is None or previous != epoch or loader not in self._training:
            return
        if epoch == 0:
            text = "(its epoch is still 0)"
            message = None
        else:
            text = f"(its epoch stays at {epoch})"
            message = (
                f"DistributedSampler {text} is iterated again with the same epoch: `set_epoch()` gets the same "
                "value every time, so every epoch sees the same order"
            )
        fields: dict[str, Any] = {"sampler": text, "evidence": {"epoch": epoch}}
        if message:
            fields["message"] = message
        self.ctx.report(SAMPLER_EPOCH, key=id(sampler), **fields)

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
            labels=order.labels, low=order.low, high=order.high,
            evidence={"labels_seen": order.labels, "first_run": order.first_run},
        )


# --- random generators copied into every worker ----------------------------------------


@dataclass(frozen=True)
class WorkerGenerators:
    """What one worker process found: the digest of each generator its first fetch used."""

    dataset: str
    base_seed: int
    worker: int
    generators: dict[str, tuple[str, str]]  # path -> (kind, digest at the start of the fetch)
    sites: dict[str, Location | None]


class WorkerRandomness(Detector):
    """TD140: a random generator on the dataset starts from the same state in several workers
    (or in every epoch): each worker process writes the states its first fetch started from,
    and the main process compares them."""

    rules = (RNG_COPIED,)
    FOLDER = "worker-rng"

    def __init__(self, ctx: Any) -> None:
        super().__init__(ctx)
        self._folder: Path | None = None
        self._own_folder: Path | None = None
        self._owner_pid = os.getpid()
        self._read: set[str] = set()
        self._seen: dict[tuple[str, str], dict[str, tuple[int, int]]] = {}
        self._done: set[tuple[str, str]] = set()

    def install(self) -> None:
        self.ctx.instrument(FirstFetch).listen(self)

    # -- in the worker ---------------------------------------------------------------------

    def before(self, info: Any) -> dict[str, tuple[str, str, Any]]:
        return {path: (kind_of(gen), digest(gen), gen) for path, gen in rng_objects(info.dataset)}

    def after(self, info: Any, states: dict[str, tuple[str, str, Any]]) -> None:
        used = {path: (kind, start) for path, (kind, start, gen) in states.items() if digest(gen) != start}
        folder = self._records()
        if not used or folder is None:
            return
        dataset = info.dataset
        record = {
            "dataset": type(dataset).__qualname__,
            "base_seed": int(info.seed) - int(info.id),
            "worker": int(info.id),
            "generators": used,
            "sites": {path: _site(dataset, path) for path in used},
        }
        folder.mkdir(parents=True, exist_ok=True)
        name = folder / f"{os.getpid()}-{time.monotonic_ns()}.json"
        partial = name.with_suffix(".part")
        partial.write_text(json.dumps(record), encoding="utf-8")
        partial.rename(name)

    # -- in the main process ---------------------------------------------------------------

    def on_loader_iter(self, event: LoaderIter) -> None:
        if event.loader.num_workers > 0:
            self._records(create=True)
            self._compare()

    def on_finish(self, outcome: Outcome) -> None:
        if os.getpid() != self._owner_pid:
            return
        self._compare()
        if self._own_folder is not None:
            shutil.rmtree(self._own_folder, ignore_errors=True)

    def _records(self, create: bool = False) -> Path | None:
        """Where workers write: the run folder under `torchdoctor run` (spawned workers find it
        too), else a temporary folder made before the first workers start (forked workers
        inherit it)."""
        if self._folder is None:
            run_dir = os.environ.get(ENV_DIR)
            if run_dir and Path(run_dir).is_dir():
                self._folder = Path(run_dir) / self.FOLDER
            elif create:
                self._own_folder = Path(tempfile.mkdtemp(prefix="torchdoctor-workers-"))
                self._folder = self._own_folder
        return self._folder

    def _compare(self) -> None:
        folder = self._folder
        if folder is None or not folder.is_dir():
            return
        for path in sorted(folder.glob("*.json")):
            if path.name in self._read:
                continue
            self._read.add(path.name)
            try:
                record = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            self._add(record)

    def _add(self, record: dict[str, Any]) -> None:
        for attribute, (kind, state) in record.get("generators", {}).items():
            key = (record["dataset"], attribute)
            starts = self._seen.setdefault(key, {})
            origin = (int(record["base_seed"]), int(record["worker"]))
            other = starts.get(state)
            starts.setdefault(state, origin)
            if other is None or other == origin or key in self._done:
                continue
            self._done.add(key)
            site = record.get("sites", {}).get(attribute)
            same = "in every epoch" if other[1] == origin[1] else "in every worker"
            self.ctx.report(
                RNG_COPIED, at=tuple(site) if site else None, key=key,
                what=f"`self.{attribute}` ({kind})", dataset=record["dataset"],
                evidence={"identical": same, "workers": sorted({other[1], origin[1]})},
            )


def kind_of(generator: Any) -> str:
    module = type(generator).__module__.split(".")[0]
    return {"numpy": "np.random.", "random": "random.", "torch": "torch."}.get(module, "") + type(generator).__name__


def digest(generator: Any) -> str:
    """A fingerprint of a generator's state (reading it draws nothing)."""
    if isinstance(generator, torch.Generator):
        data = bytes(generator.get_state().tolist())
    elif isinstance(generator, random.Random):
        data = repr(generator.getstate()).encode()
    elif hasattr(generator, "bit_generator"):
        data = repr(generator.bit_generator.state).encode()
    else:  # np.random.RandomState
        name, keys, position, has_gauss, gauss = generator.get_state()
        data = repr((name, position, has_gauss, gauss)).encode() + keys.tobytes()
    return hashlib.sha1(data).hexdigest()


def _site(dataset: Any, path: str) -> Location | None:
    """The `self.<attribute> = ...` line that stored the generator, in the class that holds it."""
    owner = dataset
    parts = re.findall(r"[^.\[\]]+|\[[^\]]*\]", path)
    for part in parts[:-1]:
        try:
            owner = owner[int(part[1:-1])] if part.startswith("[") else getattr(owner, part)
        except (AttributeError, IndexError, KeyError, TypeError, ValueError):
            return None
    if not parts or parts[-1].startswith("["):
        return None
    site = attribute_site(type(owner), parts[-1])
    return (site.file, site.line) if site is not None else None


# --- raw pixel values ---------------------------------------------------------------------


class RawPixels(Detector):
    """TD450: the first convolution of a model call gets integer values in 0..255 in a float
    tensor: images that were converted to float but never scaled (warm-up steps only)."""

    rules = (RAW_PIXELS,)
    #: model calls whose first convolution input is looked at (each read costs a device sync)
    LOOKS = 3
    #: the smallest maximum that counts as raw pixels (a mask of 0/1 or a few classes is not)
    MIN_HIGH = 64

    def __init__(self, ctx: Any) -> None:
        super().__init__(ctx)
        self._looked = 0
        self._seen_conv = False
        self._raw: tuple[str, int, int] | None = None

    def on_module_call(self, event: ModuleCall) -> None:
        if event.root:
            raw, self._raw, self._seen_conv = self._raw, None, False
            if raw is not None:
                name, low, high = raw
                self.ctx.report(RAW_PIXELS, key=name, layer=name, low=low, high=high, evidence={"min": low, "max": high})
            return
        if self._seen_conv or self._looked >= self.LOOKS or not isinstance(event.module, (nn.Conv2d, nn.Conv3d)):
            return
        self._seen_conv = True
        x = event.args[0] if event.args else None
        if not isinstance(x, torch.Tensor) or not x.is_floating_point() or x.numel() < 256:
            return
        self._looked += 1
        with torch.no_grad():
            low, high = (float(v) for v in torch.aminmax(x.detach()))
            if not (low >= 0 and self.MIN_HIGH < high <= 255):
                return
            if not bool(torch.equal(x.detach(), torch.round(x.detach()))):
                return
        self._raw = (self.ctx.modules.name_of(event.module), int(low), int(high))
