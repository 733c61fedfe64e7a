"""The sample indices of each batch a DataLoader yields, as its sampler produced them.

`_BaseDataLoaderIter._next_index` gets a stand-in that keeps what the sampler (or batch
sampler) handed out, keyed by the batch's place in the epoch: in the main process the batch
fetched next is the index just drawn; with worker processes the index goes to a worker under
the iterator's `_send_idx`, and, the batches coming back in order (`in_order=True`, the
default), the n-th batch yielded is the n-th index sent. `of(iterator)` gives the indices of
the batch the iterator yielded last; `pending(iterator)` those of the batch it waits for.
Nothing is drawn or changed: the sampler's own result is passed on as it is. Only the few
batches in flight are kept (the prefetched ones), per live iterator.
"""

from __future__ import annotations

import weakref
from typing import Any

from torch.utils.data.dataloader import _BaseDataLoaderIter

from torchdoctor.observe.faults import passes_through
from torchdoctor.observe.patching import Patches

#: batches in flight kept per iterator (workers x prefetch_factor is usually far below)
KEPT = 256
#: past this many kept, those behind the batch yielded are dropped
STALE = 64


class BatchIndices:
    """Per live DataLoader iterator: the indices of the batches drawn and not yet yielded."""

    def __init__(self) -> None:
        self._drawn: weakref.WeakKeyDictionary[Any, dict[int, Any]] = weakref.WeakKeyDictionary()
        self._count: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()

    def install(self, patches: Patches) -> None:
        original = _BaseDataLoaderIter._next_index
        drawn, count = self._drawn, self._count

        @passes_through
        def _next_index(iterator: Any) -> Any:
            index = original(iterator)
            try:
                state = vars(iterator)
                if "_send_idx" in state:  # workers: the index goes out under this number
                    key = state["_send_idx"]
                else:
                    key = count.get(iterator, 0)
                    count[iterator] = key + 1
                kept = drawn.get(iterator)
                if kept is None:
                    kept = drawn[iterator] = {}
                if len(kept) >= KEPT:
                    kept.pop(next(iter(kept)))
                kept[key] = index
            except TypeError:  # an iterator that cannot be weakly referenced: no indices for it
                pass
            return index

        _next_index.__wrapped__ = original  # type: ignore[attr-defined]
        patches.set(_BaseDataLoaderIter, "_next_index", _next_index)

    def of(self, iterator: Any) -> Any:
        """The indices of the batch `iterator` yielded last (None when unknown)."""
        return self._at(iterator, getattr(iterator, "_num_yielded", 0) - 1, pop=True)

    def pending(self, iterator: Any) -> Any:
        """The indices of the batch `iterator` is waiting for (None when unknown)."""
        return self._at(iterator, getattr(iterator, "_num_yielded", 0), pop=False)

    def _at(self, iterator: Any, position: int, pop: bool) -> Any:
        if iterator is None or getattr(iterator, "_in_order", True) is False:
            return None
        try:
            kept = self._drawn.get(iterator)
        except TypeError:
            return None
        if not kept:
            return None
        if not pop:
            return kept.get(position)
        found = kept.pop(position, None)
        if len(kept) > STALE:  # batches never yielded (a loop that broke off): drop those behind
            for stale in [key for key in kept if key < position]:
                del kept[stale]
        return found
