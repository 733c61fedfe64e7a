"""TD442: the host memory of DataLoader workers, with the numbers.

- Batches in flight: with workers, up to `prefetch_factor` x `num_workers` batches wait in
  shared memory (/dev/shm), and with `pin_memory=True` (on a machine with an accelerator) as
  many again in page-locked memory. The size of one batch is measured on the first batch;
  reported when the batches in flight take a quarter of the machine's available memory, or
  half of /dev/shm.
- Copy on access: a forked worker shares the parent's memory until it writes to it, and
  reading a Python object writes its reference count. A Dataset that keeps its records as
  Python objects is copied page by page into every worker as it is read. Each worker's private
  memory (Private_Dirty in /proc/PID/smaps_rollup) is read when the epoch starts and at each
  census; reported when a worker gained GROWTH or more while the Dataset holds a large
  Python container (PYTHON_OBJECTS items or more).

Reading /proc costs a file read per worker, only at epoch starts and censuses.
"""

from __future__ import annotations

import shutil
import sys
import weakref
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from torchdoctor.core.wording import size_text
from torchdoctor.introspect.tensors import tensors_in
from torchdoctor.observe.detector import Detector
from torchdoctor.observe.events import Batch, LoaderIter
from torchdoctor.observe.memory.census import Census
from torchdoctor.observe.memory.process import available, private_dirty
from torchdoctor.observe.memory.state import MemoryState
from torchdoctor.observe.memory.storages import storage_of
from torchdoctor.rules.data.loader_host_memory import RULE as HOST_MEMORY

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Observed

#: private memory a worker must gain for copy-on-access to be reported (and that the Dataset's
#: Python objects must take, to explain it)
GROWTH = 32 * 2**20
#: items in one Python container of the Dataset that make copy-on-access likely
PYTHON_OBJECTS = 100_000
#: batches in flight that take this fraction of the available memory, or SHM_FRACTION of /dev/shm
MEMORY_FRACTION = 0.25
SHM_FRACTION = 0.5


def shm_size() -> int | None:
    try:
        return int(shutil.disk_usage("/dev/shm").total)
    except OSError:
        return None


class LoaderHostMemory(Detector):
    """TD442 (see the module's doc)."""

    ORDER = 410
    rules = (HOST_MEMORY,)

    def __init__(self, ctx: Observed) -> None:
        super().__init__(ctx)
        #: (loader, iterator, where the loader was made) for loaders with workers; the loader may be gone
        #: (`for x in DataLoader(...)`): its iterator has what is needed
        self._iterators: list[tuple[weakref.ref[Any], weakref.ref[Any], Any]] = []
        self._first: dict[int, int] = {}  # worker pid -> private memory when first read
        self._measured: weakref.WeakSet[Any] = weakref.WeakSet()  # loaders whose batch size is known
        self._started: weakref.WeakSet[Any] = weakref.WeakSet()  # iterators whose workers' memory was first read
        self._reported: set[tuple[int, str]] = set()

    def install(self) -> None:
        self.ctx.instrument(MemoryState).listeners.append(self._census)

    def on_loader_iter(self, event: LoaderIter) -> None:
        if getattr(event.loader, "num_workers", 0) and event.iterator is not None:
            self._iterators = [entry for entry in self._iterators if entry[1]() is not None and entry[0]() is not event.loader]
            self._iterators.append((weakref.ref(event.loader), weakref.ref(event.iterator), self.ctx.loaders.site_of(event.loader)))

    def on_batch(self, event: Batch) -> None:
        loader = event.loader
        if not getattr(loader, "num_workers", 0):
            return
        current = next((entry[1]() for entry in reversed(self._iterators) if entry[0]() is loader), None)
        if current is not None and current not in self._started:
            self._started.add(current)
            self._read_workers()  # this epoch's workers have started: their memory before they read much
        if loader in self._measured:
            return
        self._measured.add(loader)
        batch = sum(s.nbytes for s in (storage_of(t) for t in tensors_in(event.batch)) if s is not None)
        self._in_flight(loader, batch)

    def _census(self, census: Census) -> None:
        if census.phase == "step":
            self._read_workers()

    # -- batches in flight -----------------------------------------------------------------------

    def _in_flight(self, loader: Any, batch: int) -> None:
        workers = int(loader.num_workers)
        prefetch = int(getattr(loader, "prefetch_factor", None) or 2)
        count = workers * prefetch
        shared = count * batch
        pinned = shared if getattr(loader, "pin_memory", False) and _accelerator() else 0
        free, shm = available(), shm_size()
        short_of_memory = free is not None and shared + pinned >= MEMORY_FRACTION * free
        short_of_shm = shm is not None and shared >= SHM_FRACTION * shm
        if not (short_of_memory or short_of_shm):
            return
        facts = {"workers": workers, "prefetch": prefetch, "count": count, "batch": size_text(batch), "shared": size_text(shared),
                 "shm": size_text(shm), "free": size_text(free)}
        if pinned:
            self._report(loader, self.ctx.loaders.site_of(loader), "in-flight", shared + pinned,
                         facts | {"pinned": size_text(pinned)}, "pinned")
        else:
            self._report(loader, self.ctx.loaders.site_of(loader), "in-flight", shared, facts, None)

    # -- copy on access ------------------------------------------------------------------------

    def _read_workers(self) -> None:
        for _loader, iterator_ref, site in list(self._iterators):
            iterator = iterator_ref()
            if iterator is None:
                continue
            grown: list[tuple[int, int, int]] = []
            for pid in _worker_pids(iterator):
                now = private_dirty(pid)
                if now is None:
                    continue
                first = self._first.setdefault(pid, now)
                if now - first >= GROWTH:
                    grown.append((pid, first, now))
            if grown:
                self._copied(iterator, site, grown)

    def _copied(self, iterator: Any, site: Any, grown: list[tuple[int, int, int]]) -> None:
        container = _python_container(getattr(iterator, "_dataset", None))
        if container is None:
            return
        name, items, estimate = container
        if estimate < GROWTH:
            return  # too small to explain the growth: something else the workers do
        first = min(f for _pid, f, _now in grown)
        now = max(n for _pid, _f, n in grown)
        workers = int(getattr(iterator, "_num_workers", len(grown)))
        facts = {"grown": len(grown), "workers": workers, "first": size_text(first), "now": size_text(now), "name": name,
                 "items": items, "estimate": size_text(estimate)}
        self._report(iterator, site, "copy-on-access", now * workers, facts, "copy-on-access")

    def _report(self, owner: Any, at: Any, kind: str, size: int, facts: dict[str, Any], variant: str | None) -> None:
        key = (id(owner) if at is None else at, kind)
        if key in self._reported:
            return
        self._reported.add(key)
        self.ctx.report(HOST_MEMORY, at=at if at is not None else True, key=kind, variant=variant,
                        fields={"size": size_text(size)} | facts, evidence={"kind": kind, "bytes": size})


def _worker_pids(iterator: Any) -> Iterator[int]:
    for worker in list(getattr(iterator, "_workers", None) or []):
        pid = getattr(worker, "pid", None)
        if isinstance(pid, int):
            yield pid


def _python_container(dataset: Any) -> tuple[str, int, int] | None:
    """The Dataset's largest list, tuple or dict of PYTHON_OBJECTS items or more: its attribute
    name, its length, and an estimate of the bytes its objects take (from a sample of them)."""
    state = getattr(dataset, "__dict__", None)
    if not isinstance(state, dict):
        return None
    found = None
    for name, value in list(state.items()):
        if isinstance(value, (list, tuple, dict)) and len(value) >= PYTHON_OBJECTS and (found is None or len(value) > found[1]):
            found = (f"self.{name}", len(value), value)
    if found is None:
        return None
    name, length, container = found
    items = list(container.values() if isinstance(container, dict) else container)
    sample = items[:: max(1, length // 100)][:100]
    each = sum(_object_bytes(item) for item in sample) / max(len(sample), 1)
    return name, length, int(each * length + sys.getsizeof(container))


def _object_bytes(value: Any) -> int:
    """An object's own size and its items' (one level: a dict of strings, a tuple of numbers)."""
    size = sys.getsizeof(value)
    if isinstance(value, dict):
        size += sum(sys.getsizeof(v) for v in list(value.values())[:64])
    elif isinstance(value, (list, tuple)):
        size += sum(sys.getsizeof(v) for v in value[:64])
    return size


def _accelerator() -> bool:
    torch = sys.modules.get("torch")
    return bool(torch is not None and torch.cuda.is_available())
