"""What detectors and crash explainers see of a run: the protocols they type against.

The session (observe/session.py) is one implementation; detectors and explainers never import
it, so the session can take them from whoever starts it (run/boot.py, `watch()`) without an
import circle. The attributes here are the whole surface they may use.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Protocol, TypeVar

import torch
from torch import nn

from torchdoctor.core.finding import Finding, Severity
from torchdoctor.core.rule import Rule
from torchdoctor.observe.events import Location
from torchdoctor.observe.instruments.autograd import BackwardWatch, GradTracker
from torchdoctor.observe.instruments.call_watch import Watcher
from torchdoctor.observe.instruments.data import LoaderIndex
from torchdoctor.observe.instruments.modules import ModuleIndex
from torchdoctor.observe.instruments.optim import OptimizerIndex
from torchdoctor.observe.instruments.tables import Table

T = TypeVar("T")


class Series(Protocol):
    """What detectors use of the per-step series (instruments/series.py's `SeriesRecorder`, a
    detector itself, which types against `Observed`: hence a protocol here, not the class)."""

    step: int

    def table(self, name: str, *, unit: str = "", kind: str = "line", capacity: int = ..., stride: int = 1,
              title: str = "") -> Table: ...

    def snapshot(self, read_device: bool = False) -> dict[str, Any]: ...


class Holdings(Protocol):
    """What the run holds, as the instruments index it: modules, optimizers, loaders, gradients."""

    #: the run folder under `torchdoctor run` (None under `watch()`)
    folder: Path | None
    #: True while the session observes closely (the first optimizer steps)
    warmup: bool
    modules: ModuleIndex
    optimizers: OptimizerIndex
    backward: BackwardWatch
    grads: GradTracker
    loaders: LoaderIndex

    @property
    def series(self) -> Series | None:
        """The per-step series for the report's curves (None when not recorded)."""

    def model_roots(self) -> list[nn.Module]: ...


class Clock(Protocol):
    """Where the run is: the counters of events, steps and backward passes."""

    seq: int
    last_backward_seq: int
    steps_at_last_backward: int
    last_backward_root_seq: int
    last_zero_grad: dict[int, int]
    zero_grad_calls: weakref.WeakKeyDictionary[Any, Location | None]

    @property
    def steps(self) -> int: ...


class Reporting(Protocol):
    """How a detector says what it found (the words lint's `ctx.report` and `Rule.finding` use too)."""

    def report(self, rule: Rule, *, at: Location | None | bool = True, fields: Mapping[str, Any] | None = None,
               variant: str | tuple[str, ...] | None = None, severity: Severity | None = None,
               evidence: dict[str, Any] | None = None, key: Any = None) -> Finding | None: ...

    def findings_of(self, rule: Rule) -> list[Finding]: ...

    def amend(self, finding: Finding, **changes: Any) -> Finding | None: ...

    def record(self, data: dict[str, Any]) -> None: ...


class Probes(Protocol):
    """Looking closer, privately: one traced step, a replay of a forward pass, a private model."""

    def trace_next_step(self, watcher: Watcher, *, now: bool = False) -> None: ...

    def replayed(self, tensor: torch.Tensor, watchers: Iterable[Watcher] = ()) -> torch.Tensor | None: ...

    def replay(self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], trace: Any = None) -> Any: ...

    def privately(self, module: nn.Module) -> contextlib.AbstractContextManager[nn.Module]: ...


class Instruments(Protocol):
    """The shared instruments a detector asks for, and the hooks and modes it leaves with the session."""

    def instrument(self, kind: type[T]) -> T: ...

    def installed(self, kind: type[T]) -> T | None: ...

    def hold(self, handle: Any) -> None: ...

    def set_aside(self, mode: Any) -> None: ...

    def stop_setting_aside(self, mode: Any) -> None: ...


class Observed(Holdings, Clock, Reporting, Probes, Instruments, Protocol):
    """The run as observed so far, and how to report on it (`self.ctx` in a detector): the narrow
    parts together. A helper that needs only one part types against it (a crash explainer's
    `Holdings`, a formatter's `Clock`), so what it can touch is plain from its signature."""
