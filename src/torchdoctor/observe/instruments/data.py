"""DataLoaders: which loaders the script iterates, each epoch, and (on request) each batch.

`DataLoader.__iter__` gets an observing stand-in (once per epoch). The per-batch stand-in on
the loader iterators is installed only when a detector listens to batches.
"""

from __future__ import annotations

import time
import weakref
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from torch.utils.data import DataLoader
from torch.utils.data.dataloader import _BaseDataLoaderIter

from torchdoctor.observe.events import Batch, LoaderIter, Location
from torchdoctor.observe.faults import FAULTS, passes_through
from torchdoctor.observe.patching import Patches

_LOADER = "_torchdoctor_loader"


@dataclass(frozen=True)
class LoaderFacts:
    """What explanations need to know about a loader after it is gone."""

    samples: int | None
    batch_size: int | None
    drop_last: bool
    num_workers: int
    site: Location | None = None  # the user's line that built it, when known


class LoaderIndex:
    """Loaders iterated so far, with how many times each was, and the facts of the last few."""

    def __init__(self) -> None:
        self.iterations: weakref.WeakKeyDictionary[DataLoader[Any], int] = weakref.WeakKeyDictionary()
        self.recent: deque[LoaderFacts] = deque(maxlen=16)
        #: where a loader was built (set by the session: LoaderSites.of)
        self.site_of: Callable[[DataLoader[Any]], Location | None] = lambda loader: None
        #: when the last batch was asked for and when it came (`time.perf_counter`; with on_batch)
        self.last_fetch: tuple[float, float] | None = None

    def install(
        self,
        patches: Patches,
        on_iter: Callable[[LoaderIter], None],
        on_batch: Callable[[Batch], None] | None,
    ) -> None:
        index = self
        original_iter = DataLoader.__iter__

        @passes_through
        def __iter__(self: DataLoader[Any]) -> Any:
            iterator = original_iter(self)
            try:
                count = index.iterations.get(self, 0) + 1
                index.iterations[self] = count
                if count == 1:
                    index.recent.append(_facts(self, index.site_of(self)))
                if on_batch is not None:
                    vars(iterator)[_LOADER] = weakref.ref(self)
                on_iter(LoaderIter(self, count, iterator))
            except Exception as exc:  # noqa: BLE001 - observing must never change the data
                FAULTS.add("the DataLoader observer", exc)
            return iterator

        __iter__.__wrapped__ = original_iter  # type: ignore[attr-defined]
        patches.set(DataLoader, "__iter__", __iter__)
        if on_batch is None:
            return
        original_next = _BaseDataLoaderIter.__next__
        clock = time.perf_counter

        @passes_through
        def __next__(self: _BaseDataLoaderIter) -> Any:
            started = clock()
            batch = original_next(self)
            index.last_fetch = (started, clock())
            try:
                ref = vars(self).get(_LOADER)
                loader = ref() if ref is not None else None
                if loader is not None:
                    on_batch(Batch(loader, batch, self))
            except Exception as exc:  # noqa: BLE001 - same as above
                FAULTS.add("the DataLoader observer", exc)
            return batch

        __next__.__wrapped__ = original_next  # type: ignore[attr-defined]
        patches.set(_BaseDataLoaderIter, "__next__", __next__)


def _facts(loader: DataLoader[Any], site: Location | None) -> LoaderFacts:
    try:
        samples: int | None = len(loader.dataset)  # type: ignore[arg-type]
    except TypeError:
        samples = None
    return LoaderFacts(samples, loader.batch_size, bool(loader.drop_last), int(loader.num_workers), site)
