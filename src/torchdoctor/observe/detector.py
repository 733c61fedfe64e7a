"""The detector API: how a runtime check plugs into `torchdoctor run` and `torchdoctor.watch()`.

A detector is a class with the rules it may report and the `on_*` methods it needs. The
session wires only the methods a detector overrides, so an event nobody listens to costs
nothing. Detectors receive the session as `self.ctx` and report through `self.ctx.report`.
See docs/run-detectors-dev.md for the contract (cost, no side effects, precision).
"""

from __future__ import annotations

import difflib
import inspect
from typing import TYPE_CHECKING, Any, ClassVar

from torchdoctor.core.plugins import DEFAULT_ORDER, PluginError
from torchdoctor.core.rule import Rule
from torchdoctor.observe.events import Backward, Batch, CompiledCall, LoaderIter, LossCall, ModuleCall, Step, ZeroGrad
from torchdoctor.observe.outcome import Outcome

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Observed

#: the event methods a detector may override (the session dispatches these by name)
EVENTS = (
    "on_module_call",
    "on_compiled_call",
    "on_loss",
    "on_loss_end",
    "on_backward",
    "on_backward_end",
    "on_zero_grad",
    "on_step",
    "on_step_end",
    "on_loader_iter",
    "on_batch",
    "on_warmup_end",
    "on_finish",
)


class Detector:
    """One runtime check. Subclass it, list `rules`, override the `on_*` methods you need.

    Every method runs inside the user's training step: keep it cheap, never synchronise
    with the device on every step, never draw random numbers, never change a tensor, a
    module, the grad mode or the RNG state. Do expensive work only during warm-up
    (`self.ctx.warmup`), or once something looks wrong.

    A subclass is checked when it is defined (a `PluginError` naming it): each `on_*` method
    must be one of `EVENTS` (a misspelt one would never be called), and `rules` must be
    declared, by the class or a detector it derives from, as a tuple of `Rule`s. There are no
    abstract detectors: every subclass a detectors module defines is installed, so every one
    is checked.
    """

    #: the rules this detector may report; it is not installed when all of them are disabled.
    #: Every subclass declares its own (or inherits a detector's): `()` for one that reports
    #: nothing (an instrument other detectors read, like memory_account's), installed always
    rules: ClassVar[tuple[Rule, ...]] = ()
    #: where the session installs it and tells it of each event: lower first (core/plugins.py);
    #: declare one when it must come before or after another detector
    ORDER: ClassVar[int] = DEFAULT_ORDER

    def __init__(self, ctx: Observed) -> None:
        self.ctx = ctx

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        problem = _event_problem(cls) or _rules_problem(cls)
        if problem:
            raise PluginError(f"{cls.__module__}: the detector {cls.__qualname__} {problem}")

    @classmethod
    def unsupported(cls) -> str | None:
        """Why this detector cannot work on the installed torch, or None (it can).

        A torch release may lack an API the detector needs (torch internals change between
        releases: dynamo, the profiler, autograd graph metadata). Return a notice naming the
        torch version (`lacking_torch` words one); the session then leaves the detector out and
        the report says so, instead of a crash or a wrong finding."""
        return None

    def install(self) -> None:
        """The session is installing its instruments: request the on-demand ones this detector
        needs here (`self.ctx.instrument(Kind)`); they are shared, and undone with the session."""

    def on_module_call(self, event: ModuleCall) -> None:
        """A module's forward returned (warm-up only: global module hooks are removed after it)."""

    def on_compiled_call(self, event: CompiledCall) -> None:
        """A `torch.compile`d module returned (every call; its inside is not observed)."""

    def on_loss(self, event: LossCall) -> None:
        """A loss function is about to run (every call)."""

    def on_loss_end(self, event: LossCall) -> None:
        """A loss function returned; `event.result` is its value (every call; keep it cheap)."""

    def on_backward(self, event: Backward) -> None:
        """backward() is about to run (every call)."""

    def on_backward_end(self, event: Backward) -> None:
        """backward() returned without raising (every call)."""

    def on_zero_grad(self, event: ZeroGrad) -> None:
        """zero_grad() of an optimizer or a module was called (every call)."""

    def on_step(self, event: Step) -> None:
        """An optimizer is about to step (every step)."""

    def on_step_end(self, event: Step) -> None:
        """An optimizer has stepped (every step)."""

    def on_loader_iter(self, event: LoaderIter) -> None:
        """A DataLoader is iterated (each epoch)."""

    def on_batch(self, event: Batch) -> None:
        """A DataLoader produced a batch (every batch; only wired for detectors that override it)."""

    def on_warmup_end(self) -> None:
        """The warm-up steps are over (or the run ended first): conclude what needed them."""

    def on_finish(self, outcome: Outcome) -> None:
        """The run (or the `watch()` block) ended; `outcome` says how."""


def _event_problem(cls: type[Detector]) -> str | None:
    """An `on_*` method the session never calls: the session dispatches only `EVENTS`."""
    for name, value in vars(cls).items():
        if name.startswith("on_") and name not in EVENTS and inspect.isroutine(value):
            close = difflib.get_close_matches(name, EVENTS, n=1)
            hint = f"did you mean {close[0]}?" if close else f"the events are {', '.join(EVENTS)}"
            return f"defines {name}, which is no event and would never be called ({hint})"
    return None


def _rules_problem(cls: type[Detector]) -> str | None:
    """`rules` forgotten or misspelt (the detector would be installed even with its rules
    disabled), or not Rules (the session asks each whether it is enabled)."""
    if not any("rules" in vars(base) for base in cls.__mro__ if base is not Detector):
        return "declares no rules (`rules = (RULE, ...)`, the rules it may report; `rules = ()` if it reports none)"
    if not isinstance(cls.rules, tuple):
        return f"has rules of type {type(cls.rules).__name__}, not a tuple of Rules (`rules = (RULE, ...)`)"
    for rule in cls.rules:
        if not isinstance(rule, Rule):
            return f"lists {rule!r} in its rules, not a Rule (give the rule object, `RULE`, not its code)"
    return None


def lacking_torch(what: str, needs: str) -> str:
    """The notice of a detector left out because this torch lacks `what` (e.g. what="TD480 graph
    breaks (torch._dynamo.explain)", needs="2.5"): it names the installed version."""
    import torch

    return f"{what} not checked: it needs torch >= {needs}, and this is torch {torch.__version__}"


def overridden(detector: Detector, event: str) -> bool:
    """True when the detector's class defines its own `event` method."""
    return getattr(type(detector), event) is not getattr(Detector, event)
