"""The first batch each DataLoader worker process fetches, for detectors that look at what a
worker's copy of the dataset does (its random generators).

The dataset fetchers' `fetch` gets a stand-in. In the main process (no worker info) and after
a worker's first batch it calls straight through; the first batch of each worker process is
fetched between the listeners' `before` and `after`. Forked workers inherit the stand-in;
spawned workers under `torchdoctor run` install their own when they import torch.
"""

from __future__ import annotations

import os
from typing import Any, Protocol

from torch.utils.data import get_worker_info
from torch.utils.data._utils import fetch as fetchers

from torchdoctor.observe.faults import FAULTS, passes_through
from torchdoctor.observe.patching import Patches

FETCHERS = ("_MapDatasetFetcher", "_IterableDatasetFetcher")


class FetchListener(Protocol):
    def before(self, info: Any) -> Any:
        """The worker's first fetch is about to run (`info` is `get_worker_info()`); returns a token."""

    def after(self, info: Any, token: Any) -> None:
        """That fetch returned."""


class FirstFetch:
    """Calls the listeners around the first fetch of every worker process."""

    def __init__(self) -> None:
        self._listeners: list[FetchListener] = []
        self._done_in: int | None = None  # the pid of the worker whose first fetch was seen

    def listen(self, listener: FetchListener) -> None:
        self._listeners.append(listener)

    def install(self, patches: Patches) -> None:
        for name in FETCHERS:
            cls = getattr(fetchers, name, None)
            if cls is not None:
                patches.set(cls, "fetch", self._stand_in(cls.fetch))

    def _stand_in(self, original: Any) -> Any:
        watch = self

        @passes_through
        def fetch(fetcher: Any, possibly_batched_index: Any) -> Any:
            info = get_worker_info() if watch._listeners else None
            if info is None or watch._done_in == os.getpid():  # the main process, or seen already
                return original(fetcher, possibly_batched_index)
            watch._done_in = os.getpid()
            tokens = []
            for listener in watch._listeners:
                try:
                    tokens.append(listener.before(info))
                except Exception as exc:  # noqa: BLE001 - observing must never change the data
                    FAULTS.add("the DataLoader worker observer", exc)
                    tokens.append(None)
            result = original(fetcher, possibly_batched_index)
            for listener, token in zip(watch._listeners, tokens):
                try:
                    listener.after(info, token)
                except Exception as exc:  # noqa: BLE001 - same as above
                    FAULTS.add("the DataLoader worker observer", exc)
            return result

        fetch.__wrapped__ = original  # type: ignore[attr-defined]
        fetch.__qualname__ = original.__qualname__
        return fetch
