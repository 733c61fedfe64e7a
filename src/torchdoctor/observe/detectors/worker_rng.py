"""TD140: random generators stored on the dataset, starting from the same state in every
DataLoader worker (or in every epoch).

Each worker process fingerprints the generators of its copy of the dataset around its first
fetch (in the worker, where reading a generator's state draws nothing) and writes the
fingerprints of those the fetch used to a file; the main process compares them when the next
epoch starts and at the end.
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
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from torchdoctor.introspect.rng import rng_objects
from torchdoctor.introspect.sites import attribute_site
from torchdoctor.observe.detector import Detector
from torchdoctor.observe.events import LoaderIter, Location
from torchdoctor.observe.instruments.loader_sites import LoaderSites
from torchdoctor.observe.instruments.worker_fetch import FirstFetch
from torchdoctor.observe.outcome import Outcome
from torchdoctor.rules.data.rng_copied_into_workers import RULE as RNG_COPIED
from torchdoctor.run.records import ENV_DIR

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Observed


class WorkerRandomness(Detector):
    """TD140: a random generator on the dataset starts from the same state in several workers
    (or in every epoch): each worker process writes the states its first fetch started from,
    and the main process compares them."""

    ORDER = 250
    rules = (RNG_COPIED,)
    FOLDER = "worker-rng"

    def __init__(self, ctx: Observed) -> None:
        super().__init__(ctx)
        self._folder: Path | None = None
        self._own_folder: Path | None = None
        self._owner_pid = os.getpid()
        self._read: set[str] = set()
        self._seen: dict[tuple[str, str], dict[str, tuple[int, int]]] = {}
        self._done: set[tuple[str, str]] = set()
        #: dataset class -> the line that built a loader with workers over it (when the
        #: generator's own line cannot be found)
        self._loaders: dict[str, Location | None] = {}
        self._sites: LoaderSites | None = None

    def install(self) -> None:
        self.ctx.instrument(FirstFetch).listen(self)
        self._sites = self.ctx.instrument(LoaderSites)
        self._records(create=True)  # before any worker is forked: they inherit where to write

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
        loader = event.loader
        if loader.num_workers > 0:
            if event.index == 1:
                self._loaders[type(loader.dataset).__qualname__] = self._sites.of(loader) if self._sites else None
            self._compare()

    def on_finish(self, outcome: Outcome) -> None:
        if os.getpid() != self._owner_pid:
            return
        self._compare()
        if self._own_folder is not None:
            shutil.rmtree(self._own_folder, ignore_errors=True)

    def _records(self, create: bool = False) -> Path | None:
        """Where workers write: the run folder under `torchdoctor run` (spawned workers find it
        too), else a temporary folder made when the session starts (forked workers inherit it)."""
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
            site = record.get("sites", {}).get(attribute) or self._loaders.get(record["dataset"])
            same = "in every epoch" if other[1] == origin[1] else "in every worker"
            self.ctx.report(
                RNG_COPIED, at=tuple(site) if site else None, key=key,
                fields={"what": f"`self.{attribute}` ({kind})", "dataset": record["dataset"]},
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
