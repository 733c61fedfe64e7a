"""Where each DataLoader was built: the line to change for a loader argument (`shuffle=`,
`worker_init_fn=`). `DataLoader.__init__` gets an observing stand-in (once per loader)."""

from __future__ import annotations

import weakref
from typing import Any

from torch.utils.data import DataLoader

from torchdoctor.core.locate import caller_in_user_code
from torchdoctor.observe.events import Location
from torchdoctor.observe.instruments.compiled import traced
from torchdoctor.observe.patching import Patches, observed


class LoaderSites:
    """DataLoader -> the user's line that built it."""

    def __init__(self) -> None:
        self.created: weakref.WeakKeyDictionary[DataLoader[Any], Location | None] = weakref.WeakKeyDictionary()

    def install(self, patches: Patches) -> None:
        patches.set(DataLoader, "__init__", observed(DataLoader.__init__, self._created, skip=traced))

    def of(self, loader: DataLoader[Any]) -> Location | None:
        return self.created.get(loader)

    def _created(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        loader = args[0] if args else kwargs.get("self")
        if loader is not None and loader not in self.created:
            self.created[loader] = caller_in_user_code()
