"""Learning-rate schedulers: which optimizer each drives, how often the user steps it, where.

`torch.optim.lr_scheduler` has no hooks, so the `__init__` and `step` of `LRScheduler` and of
every class of that module that defines its own get observing stand-ins (in torch 2.13
`ReduceLROnPlateau`, `SequentialLR` and `ChainedScheduler` do not call `LRScheduler.__init__`,
and they and `CosineAnnealingWarmRestarts` have their own `step`). A subclass written by the
user goes through the stand-ins of the torch class it calls `super()` of.

Only the outermost call counts: the initial step a constructor takes and the steps
`SequentialLR` / `ChainedScheduler` give their children pass straight through (one integer
read each), so a scheduler's count is the number of `step()` calls the user's code made. The
user's line of those calls is looked up on the first few calls of each scheduler only.
Schedulers step once per epoch or once per optimizer step: this costs nothing measurable.
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import Any

from torch.optim import lr_scheduler
from torch.optim.optimizer import Optimizer

from torchdoctor.core.locate import user_frame
from torchdoctor.observe.events import Location
from torchdoctor.observe.faults import FAULTS, passes_through
from torchdoctor.observe.instruments.compiled import traced
from torchdoctor.observe.patching import Patches, observed

#: the calls of each scheduler whose user line is looked up (the first one that has one wins)
LOCATED_CALLS = 3
#: the settings shown for a scheduler, by class name (those that size its schedule)
SETTINGS: dict[str, tuple[str, ...]] = {
    "StepLR": ("step_size", "gamma"),
    "MultiStepLR": ("milestones", "gamma"),
    "ExponentialLR": ("gamma",),
    "CosineAnnealingLR": ("T_max", "eta_min"),
    "LinearLR": ("total_iters", "end_factor"),
    "PolynomialLR": ("total_iters", "power"),
    "ConstantLR": ("total_iters",),
    "MultiplicativeLR": (),
    "ReduceLROnPlateau": ("patience", "factor"),
    "CosineAnnealingWarmRestarts": ("T_0", "T_mult"),
    "OneCycleLR": ("total_steps",),
    "CyclicLR": (),
}


@dataclass
class SchedulerInfo:
    """One scheduler: its class, the settings that size its schedule, its `step()` calls."""

    kind: str
    settings: str  # "step_size=30, gamma=0.1" ("" when unknown)
    steps: int = 0  # step() calls made by the user's code (the constructor's own step excluded)
    stepped_at: Location | None = None  # the user's line of its step() calls


class Schedulers:
    """Every LR scheduler built while observing; listeners hear of each new one with its optimizer."""

    def __init__(self) -> None:
        self.known: weakref.WeakKeyDictionary[Any, SchedulerInfo] = weakref.WeakKeyDictionary()
        self._listeners: list[Callable[[Optimizer, SchedulerInfo], None]] = []
        self._depth = 0

    def listen(self, listener: Callable[[Optimizer, SchedulerInfo], None]) -> None:
        self._listeners.append(listener)

    def install(self, patches: Patches) -> None:
        for cls in _scheduler_classes():
            own = vars(cls)
            if "__init__" in own:
                patches.set(cls, "__init__", self._init_stand_in(own["__init__"]))
            if "step" in own:
                patches.set(cls, "step", observed(own["step"], self._before_step, self._after_step, skip=traced))

    def _init_stand_in(self, original: Callable[..., None]) -> Callable[..., None]:
        schedulers = self

        @passes_through
        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            schedulers._depth += 1
            try:
                original(self, *args, **kwargs)
            finally:
                schedulers._depth -= 1
            if not schedulers._depth:
                try:
                    schedulers._created(self)
                except Exception as exc:  # noqa: BLE001 - observing must never break construction
                    FAULTS.add("the LR scheduler observer", exc)

        __init__.__wrapped__ = original  # type: ignore[attr-defined]
        __init__.__doc__ = original.__doc__
        __init__.__qualname__ = original.__qualname__
        return __init__

    def _created(self, scheduler: Any) -> None:
        optimizer = getattr(scheduler, "optimizer", None)
        if not isinstance(optimizer, Optimizer):
            return
        info = SchedulerInfo(type(scheduler).__name__, _settings(scheduler))
        self.known[scheduler] = info
        for listener in self._listeners:
            listener(optimizer, info)

    def _before_step(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self._depth += 1  # first: `_after_step` always undoes it
        if self._depth != 1 or not args:
            return
        info = self.known.get(args[0])
        if info is None:
            return
        info.steps += 1
        if info.stepped_at is None and info.steps <= LOCATED_CALLS:
            info.stepped_at = _caller(sys._getframe(1))

    def _after_step(self) -> None:
        self._depth -= 1


def _scheduler_classes() -> list[type]:
    base = lr_scheduler.LRScheduler
    found = [value for value in vars(lr_scheduler).values() if isinstance(value, type) and issubclass(value, base)]
    plateau = getattr(lr_scheduler, "ReduceLROnPlateau", None)  # not an LRScheduler before torch 2.2
    if isinstance(plateau, type) and plateau not in found:
        found.append(plateau)
    return found


def _caller(frame: FrameType | None) -> Location | None:
    """The user's line that called `scheduler.step()`: the innermost user frame that is not
    itself the `step` method of a scheduler (a user's subclass calling `super().step()`)."""
    frame = user_frame(frame)
    for _ in range(8):
        if frame is None or frame.f_code.co_name != "step" or not _is_scheduler(frame.f_locals.get("self")):
            break
        frame = user_frame(frame.f_back)
    return (frame.f_code.co_filename, frame.f_lineno) if frame is not None else None


def _is_scheduler(value: Any) -> bool:
    plateau = getattr(lr_scheduler, "ReduceLROnPlateau", ())
    return isinstance(value, (lr_scheduler.LRScheduler, plateau))


def _settings(scheduler: Any) -> str:
    parts = []
    for name in SETTINGS.get(type(scheduler).__name__, ()):
        value = getattr(scheduler, name, None)
        if name == "milestones" and value is not None:
            value = sorted(value)
            value = value if len(value) <= 4 else [*value[:4], "..."]
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            parts.append(f"{name}={value:g}" if isinstance(value, float) else f"{name}={value}")
        elif isinstance(value, list):
            parts.append(f"{name}=[{', '.join(str(v) for v in value)}]")
    return ", ".join(parts)
