"""Time wasted in the training step.

TD163: a module called once per sample, on slices of one batch tensor (`model(x[i])` in a
Python loop), seen during the warm-up steps.
TD452: host-device synchronisations (`.item()`, `.cpu()`, `print(tensor)`, ...) on every step
of a GPU run. A few steps are traced after warm-up; a line that synchronises in every traced
step is reported. CPU runs have nothing to synchronise with: the detector stays idle there.
"""

from __future__ import annotations

import os
import sys
import weakref
from collections import Counter
from dataclasses import dataclass, field
from types import FrameType
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from torchdoctor.core.finding import Severity
from torchdoctor.core.locate import caller_in_user_code, is_user_file
from torchdoctor.introspect.tensors import tensors_in
from torchdoctor.observe.detector import Detector
from torchdoctor.observe.events import Backward, Location, ModuleCall, Step
from torchdoctor.observe.instruments.optim import params_of
from torchdoctor.observe.support import place, source_call
from torchdoctor.rules.performance.host_sync_every_step import RULE as HOST_SYNC
from torchdoctor.rules.performance.per_sample_loop import RULE as PER_SAMPLE

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Observed

#: run the GPU-only checks on CPU tensors (tests and doc proofs on machines without a GPU)
ENV_DEVICE_CHECKS_ON_CPU = "TORCHDOCTOR_DEVICE_CHECKS_ON_CPU"


@dataclass
class SampleCalls:
    module: weakref.ref[nn.Module]
    rows: int  # the batch size of the sliced tensor
    calls: int = 0
    location: Location | None = None


class PerSampleLoop(Detector):
    """TD163: one module called per sample of the same batch, within one step."""

    ORDER = 310
    rules = (PER_SAMPLE,)
    MIN_CALLS = 4

    def __init__(self, ctx: Observed) -> None:
        super().__init__(ctx)
        self._calls: dict[tuple[int, int], SampleCalls] = {}
        self._reported: set[int] = set()

    def on_module_call(self, event: ModuleCall) -> None:
        module = event.module
        if isinstance(module, nn.RNNCellBase):
            return
        tensors = list(tensors_in((event.args, event.kwargs)))
        if len(tensors) != 1:
            return  # a state passed along (a recurrent cell over time steps) is not a per-sample call
        x = tensors[0]
        base = x._base
        if base is None or base.dim() < 1 or base.shape[0] < self.MIN_CALLS:
            return
        one = tuple(base.shape[1:])
        if tuple(x.shape) != one and tuple(x.shape) != (1, *one):
            return
        key = (id(module), id(base))
        calls = self._calls.get(key)
        if calls is None:
            calls = self._calls[key] = SampleCalls(weakref.ref(module), int(base.shape[0]), location=caller_in_user_code())
        calls.calls += 1

    def on_backward(self, event: Backward) -> None:
        self._conclude()

    def on_warmup_end(self) -> None:
        self._conclude()

    def _conclude(self) -> None:
        calls, self._calls = self._calls, {}
        looping = [r for r in calls.values() if r.module() is not None and r.calls >= max(self.MIN_CALLS, r.rows // 2)]
        for record in looping:
            module = record.module()
            if module is None or id(module) in self._reported or _inside_another(module, looping):
                continue
            self._reported.add(id(module))
            name = self.ctx.modules.name_of(module)
            self.ctx.report(
                PER_SAMPLE, at=record.location, key=id(module), variant="module-per-sample",
                fields={"module": name, "calls": record.calls, "batch_size": record.rows},
                evidence={"calls": record.calls, "batch": record.rows},
            )


def _inside_another(module: nn.Module, records: list[SampleCalls]) -> bool:
    """A submodule of another module called per sample: the outer call is the loop to fix."""
    for record in records:
        outer = record.module()
        if outer is not None and outer is not module and any(m is module for m in outer.modules()):
            return True
    return False


#: Tensor methods and functions that copy a device value to the host and wait for the device
SYNCING = frozenset({"item", "tolist", "cpu", "numpy", "__bool__", "__float__", "__int__", "__index__",
                     "__format__", "__repr__", "nonzero", "equal", "to"})


@dataclass
class SyncWatcher:
    """Counts synchronising calls on device tensors, by user line, over one traced step."""

    detector: HostSyncs
    functions: frozenset[str] = SYNCING
    counts: Counter[Location] = field(default_factory=Counter)
    names: dict[Location, str] = field(default_factory=dict)

    def seen(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any, location: Location | None) -> None:
        tensor = args[0] if args else None
        if location is None or not isinstance(tensor, torch.Tensor) or not self.detector.lives_on_device(tensor):
            return
        if not _called_by_user(sys._getframe(2)):
            return  # torch's own reads (an optimizer's step counter), not a line of the script
        if name == "to" and not (isinstance(result, torch.Tensor) and result.device.type == "cpu" and result is not tensor):
            return
        self.counts[location] += 1
        self.names.setdefault(location, name)

    def done(self) -> None:
        self.detector.traced(self)


DISPATCH_FILES = (f"torch{os.sep}overrides.py", f"torch{os.sep}_tensor.py")

#: what the implicit conversions look like in the script
IMPLICIT = {
    "__bool__": "a tensor used as a condition", "__format__": "formatting a tensor", "__repr__": "printing a tensor",
    "__float__": "`float(tensor)`", "__int__": "`int(tensor)`", "__index__": "a tensor used as an index",
}


def _describe(line: Location, name: str) -> str:
    """`loss.item()` as written on the line, or what an implicit conversion looks like."""
    if name in IMPLICIT:
        return IMPLICIT[name][0].upper() + IMPLICIT[name][1:]
    call = source_call(line, r"[\w.\[\]]+\." + name)
    return f"`{call}`" if call else f"`.{name}()`"


def _called_by_user(frame: FrameType | None) -> bool:
    """Whether the call was written in user code: the first frame outside torch's dispatch
    helpers (`overrides.py`, the Python methods of `_tensor.py`) and torchdoctor is a user's."""
    while frame is not None:
        filename = frame.f_code.co_filename
        if not (filename.endswith(DISPATCH_FILES) or f"{os.sep}torchdoctor{os.sep}" in filename):
            return is_user_file(filename)
        frame = frame.f_back
    return False


class HostSyncs(Detector):
    """TD452: a line that makes the host wait for the GPU in every traced step."""

    ORDER = 320
    rules = (HOST_SYNC,)
    #: optimizer steps after which one step is traced (the gaps differ, so a line that runs
    #: every N steps for logging is not in all of them)
    TRACED = (6, 13, 23)

    def __init__(self, ctx: Observed) -> None:
        super().__init__(ctx)
        self._device: bool | None = None
        self._windows: list[SyncWatcher] = []
        self._on_cpu = os.environ.get(ENV_DEVICE_CHECKS_ON_CPU) == "1"

    def lives_on_device(self, tensor: torch.Tensor) -> bool:
        """A tensor whose values live on an accelerator (CPU ones too when asked to, for tests)."""
        return tensor.device.type not in ("cpu", "meta") or (self._on_cpu and tensor.device.type == "cpu")

    def on_step_end(self, event: Step) -> None:
        if self.ctx.steps not in self.TRACED:
            return
        if self._device is None:
            self._device = any(self.lives_on_device(p) for p in params_of(event.optimizer))
        if self._device:
            self.ctx.trace_next_step(SyncWatcher(self))

    def traced(self, watcher: SyncWatcher) -> None:
        self._windows.append(watcher)
        if len(self._windows) < len(self.TRACED):
            return
        every = set(self._windows[0].counts)
        for window in self._windows[1:]:
            every &= set(window.counts)
        per_step = {line: min(w.counts[line] for w in self._windows) for line in every}
        total = sum(per_step.values())
        for line, count in sorted(per_step.items(), key=lambda item: -item[1])[:3]:
            call = _describe(line, self._windows[0].names.get(line, "item"))
            self.ctx.report(
                HOST_SYNC, at=line, key=line, fields={"call": call, "count": count},
                severity=Severity.WARNING if total >= 3 else Severity.INFO,
                evidence={"per_step": count, "all_lines_per_step": total, "line": place(line)},
            )
