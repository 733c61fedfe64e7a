"""The observation session of one process: instruments in, detectors told, findings out.

One session per process (PyTorch's hooks are global). It installs the instruments, wires each
detector's `on_*` methods to the events, runs the warm-up (close observation during the first
optimizer steps, then only the cheap per-step hooks stay), schedules one-step traces that
detectors ask for, de-duplicates findings and hands each new one to `emit` at once.
"""

from __future__ import annotations

import contextlib
import io
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import torch
from torch import nn
from torch._C._profiler import _RecordFunctionFast
from torch.optim.optimizer import Optimizer

from torchdoctor.core.finding import Finding, Severity
from torchdoctor.core.locate import caller_in_user_code
from torchdoctor.core.rule import Rule
from torchdoctor.introspect.tensors import tensors_in
from torchdoctor.observe import reporting
from torchdoctor.observe.detector import EVENTS, Detector, overridden
from torchdoctor.observe.events import (
    Backward,
    Batch,
    CompiledCall,
    LoaderIter,
    Location,
    LossCall,
    ModuleCall,
    Step,
    ZeroGrad,
)
from torchdoctor.observe.faults import FAULTS, Fault, debugging
from torchdoctor.observe.instruments import functional
from torchdoctor.observe.instruments.autograd import BackwardWatch, GradTracker
from torchdoctor.observe.instruments.call_watch import OpTrace, Watcher
from torchdoctor.observe.instruments.compiled import CompileBoundary, CompileSites, eager
from torchdoctor.observe.instruments.data import LoaderIndex
from torchdoctor.observe.instruments.loader_sites import LoaderSites
from torchdoctor.observe.instruments.modules import ModuleIndex
from torchdoctor.observe.instruments.optim import OptimizerIndex, params_of
from torchdoctor.observe.instruments.series import SeriesRecorder
from torchdoctor.observe.outcome import Outcome
from torchdoctor.observe.patching import Patches
from torchdoctor.observe.replay import strong, untouched, weak
from torchdoctor.observe.self_cost import STEADY, WARMUP, SelfCost
from torchdoctor.rules.api.run_internal_error import RULE as INTERNAL_ERROR
from torchdoctor.trace.options import OWN

Emit = Callable[[Finding, str], None]
Record = Callable[[dict[str, Any]], None]
T = TypeVar("T")
#: the handlers the instruments call: timed under `--profile-self` as the session's own cost
_HANDLERS = ("_on_root_call", "_on_module_call", "_on_loss", "_on_loss_end", "_on_backward", "_on_backward_end",
             "_on_zero_grad", "_on_step", "_on_step_end", "_on_loader_iter", "_on_batch", "_compiled_return")


def observation_lacks() -> str | None:
    """What of torch the session's instruments need that this torch lacks, in words (None: nothing).

    torch before 2.3 lacks `torch.compiler.is_compiling`, and torch 2.3.1 lacks keyword
    arguments in its global module hooks: the session cannot start on either."""
    import inspect

    from torch.nn.modules.module import register_module_forward_hook

    if not hasattr(torch, "compiler") or not hasattr(torch.compiler, "is_compiling"):
        return "torch.compiler.is_compiling()"
    try:
        parameters = inspect.signature(register_module_forward_hook).parameters
    except (TypeError, ValueError):
        return None
    if "with_kwargs" not in parameters:
        return "global module forward hooks with keyword arguments (register_module_forward_hook(with_kwargs=True))"
    return None


class Session:
    """What the detectors see of the run (`self.ctx` in a detector); see docs/run-detectors-dev.md."""

    #: optimizer steps (of every optimizer that steps) observed closely before the hooks go
    WARMUP_STEPS: ClassVar[int] = 3
    #: top-level module calls without any backward() after which module hooks pause (inference)
    IDLE_FORWARDS: ClassVar[int] = 200
    #: backward() calls after which warm-up ends when no torch optimizer exists (weights updated
    #: by hand): more than WARMUP_STEPS, as a few may come before the optimizer is built
    MANUAL_WARMUP_BACKWARDS: ClassVar[int] = 8

    _current: ClassVar[Session | None] = None

    def __init__(
        self,
        emit: Emit,
        enabled: frozenset[str] | None = None,
        detectors: Iterable[type[Detector]] = (),
        *,
        record: Record | None = None,
        folder: Path | None = None,
        series: bool = True,
        profile_self: bool = False,
    ) -> None:
        self._emit = emit
        #: `--profile-self`: times every detector call and the session's own handlers (self_cost.py)
        self.cost = SelfCost(lambda: STEADY if not self.warmup else WARMUP) if profile_self else None
        if self.cost is not None:  # before the instruments are handed the handlers
            for name in _HANDLERS:
                setattr(self, name, self.cost.wrap("session", name.lstrip("_"), getattr(self, name)))
        self._enabled = enabled
        self._record = record
        #: the run folder under `torchdoctor run` (None under `watch()`): for files the runner reads
        self.folder = folder
        self._found: dict[tuple[Any, ...], Finding] = {}
        self._listeners: list[Emit] = []
        self._patches = Patches()
        self._pending_traces: list[Watcher] = []
        self._trace: OpTrace | None = None
        self._ended_traces: list[OpTrace] = []  # ended inside their own handler: leave later
        self._forwards_since_backward = 0
        self._finished = False
        #: True while the session observes closely (the first optimizer steps)
        self.warmup = True
        self.modules = ModuleIndex(on_call=None, on_root=self._on_root_call)
        self.optimizers = OptimizerIndex(on_step=self._on_step, on_step_end=self._on_step_end, on_zero_grad=self._on_zero_grad)
        self.backward = BackwardWatch(before=self._on_backward, after=self._on_backward_end)
        self.grads = GradTracker()
        self.loaders = LoaderIndex()
        #: sequence numbers of the last events, to tell their order (see `seq`)
        self.seq = 0
        self.last_backward_seq = 0
        #: optimizer steps completed when the last backward() returned
        self.steps_at_last_backward = 0
        #: the newest graph node the last completed backward() started from (`_sequence_nr`):
        #: nodes older than it may have been freed by it
        self.last_backward_root_seq = -1
        self.last_zero_grad: dict[int, int] = {}  # id(optimizer or module) -> seq
        self.zero_grad_calls: weakref.WeakKeyDictionary[Any, Location | None] = weakref.WeakKeyDictionary()
        self._instruments: dict[type[Any], Any] = {}
        self._replaying = False
        self._aside: list[Any] = []  # modes of other observers, set aside around compiled code
        self._compiled_calls: weakref.WeakKeyDictionary[nn.Module, int] = weakref.WeakKeyDictionary()
        #: the last call of a compiled module: (module, weak args, weak kwargs, its output tensors)
        self._last_compiled: tuple[weakref.ref[nn.Module], Any, Any, list[weakref.ref[torch.Tensor]]] | None = None
        #: what the report says of detectors left out because this torch lacks what they need
        self.notices: list[str] = []
        self.detectors = [cls(self) for cls in detectors if self._wanted(cls) and self._supported(cls)]
        #: the per-step series for the report's curves (instruments/series.py); None when not recorded
        self.series = SeriesRecorder(self) if series else None
        if self.series is not None:
            self.detectors.append(self.series)
        self._wire()

    # -- life cycle -------------------------------------------------------------------------

    @classmethod
    def start(
        cls,
        emit: Emit,
        enabled: frozenset[str] | None = None,
        detectors: Iterable[type[Detector]] = (),
        *,
        record: Record | None = None,
        folder: Path | None = None,
        series: bool = True,
        profile_self: bool = False,
    ) -> Session:
        """Create the process's session and install it (the previous one, if any, is stopped).

        `detectors` come from whoever starts the session (run/boot.py, `watch()`: the built-in
        ones and the plugins'); the session imports none, so they can type against
        observe/observed.py without an import circle."""
        lacking = observation_lacks()
        if lacking:
            raise RuntimeError(f"observing a run needs {lacking}, which torch {torch.__version__} lacks "
                               "(the torch releases torchdoctor is tested on: docs/compat.md)")
        if cls._current is not None:
            cls._current.uninstall()
        session = cls(emit, enabled, detectors, record=record, folder=folder, series=series, profile_self=profile_self)
        FAULTS.seen.clear()  # a new session reports its own
        FAULTS.listener = session._fault
        session.install()
        cls._current = session
        return session

    @classmethod
    def current(cls) -> Session | None:
        return cls._current

    def install(self) -> None:
        patches = self._patches
        self.optimizers.install(patches)
        self.backward.install(patches)
        functional.install(patches, self._on_loss, self._on_loss_end if self._has("on_loss_end") else None)
        self.loaders.install(patches, self._on_loader_iter, self._on_batch if self._has("on_batch") else None)
        self.loaders.site_of = self.instrument(LoaderSites).of
        CompileBoundary(self._outside, self.modules.compiled_call, self._compiled_return, self._dynamo_loaded).install(patches)
        if self._has("on_module_call"):
            self.modules.on_call = self._on_module_call
        self.modules.start()
        for detector in self.detectors:
            if overridden(detector, "install"):
                self._call(detector.install)

    def _dynamo_loaded(self) -> None:
        """torch._dynamo was imported: the compile instruments a detector asked for attach."""
        sites = self.installed(CompileSites)
        if sites is not None:
            sites.attach()

    def uninstall(self) -> None:
        self._end_trace()
        self._leave_ended_traces()
        self.modules.close()
        self.grads.stop()
        self._patches.undo()
        if FAULTS.listener == self._fault:
            FAULTS.listener = None
        if Session._current is self:
            Session._current = None

    def after_fork(self) -> None:
        """In a forked child (a DataLoader worker): keep observing, but without the parent's
        half-done trace (its mode came along on the copied stack; the parent concludes it)."""
        for trace in [self._trace, *self._ended_traces]:
            if trace is not None:
                trace.active = False
                trace.leave()
        self._trace = None
        self._ended_traces = []
        self._pending_traces = []
        for instrument in self._instruments.values():
            if hasattr(instrument, "after_fork"):
                instrument.after_fork()

    def finish(self, outcome: Outcome) -> None:
        """Let the detectors conclude and write the final counts of repeated findings."""
        if self._finished:
            return
        self._finished = True
        self._end_trace()
        if self.warmup:
            self._end_warmup()
        for detector in self.detectors:
            if overridden(detector, "on_finish"):
                self._call(detector.on_finish, outcome)
        for key, finding in self._found.items():
            if finding.count > 1:
                self._send(finding, key)

    # -- what detectors use -------------------------------------------------------------------

    def enabled(self, rule: Rule) -> bool:
        return self._enabled is None or rule.code in self._enabled

    def report(self, rule: Rule, *, at: Location | None | bool = True, fields: Mapping[str, Any] | None = None,
               variant: str | tuple[str, ...] | None = None, severity: Severity | None = None,
               evidence: dict[str, Any] | None = None, key: Any = None) -> Finding | None:
        """Report one finding of `rule`; repeats of the same (rule, place, key) only count.

        `at` is the user's line; by default the innermost user frame of the current call
        stack (the line in the script that led here). Pass `at=None` for no line. `fields`
        fill the templates of the rule or of its `variant`; `severity` overrides the rule's,
        `evidence` is what the finding carries for a reader (lint's `report` takes the same words).
        """
        if not self.enabled(rule):
            return None
        location = caller_in_user_code() if at is True else at or None
        dedup = (rule.code, location, key)
        known = self._found.get(dedup)
        if known is not None:
            from dataclasses import replace

            self._found[dedup] = replace(known, count=known.count + 1)
            return None
        finding = reporting.build(rule, location, fields or {}, {"variant": variant, "severity": severity, "evidence": evidence})
        self._found[dedup] = finding
        self._send(finding, dedup)
        return finding

    def findings_of(self, rule: Rule) -> list[Finding]:
        """The findings of `rule` reported so far in this process (latest versions)."""
        return [finding for key, finding in self._found.items() if key[0] == rule.code]

    def amend(self, finding: Finding, **changes: Any) -> Finding | None:
        """Replace a reported finding with `changes` (a detector that learnt more later, e.g.
        how much memory a leak another detector found holds): one finding per bug, not two.
        Returns the new version (None when `finding` was not reported by this session)."""
        from dataclasses import replace

        for key, known in self._found.items():
            if known is finding:
                amended = self._found[key] = replace(known, **changes)
                self._send(amended, key)
                return amended
        return None

    def record(self, data: dict[str, Any]) -> None:
        """Write a record that is not a finding for the runner (under `torchdoctor run` only):
        what must be compared across ranks is compared there, never through the job's own
        process group."""
        if self._record is not None:
            self._record(data)

    def add_listener(self, listener: Emit) -> None:
        """Also hand every new finding to `listener` (used by `watch()` inside `torchdoctor run`)."""
        self._listeners.append(listener)

    def remove_listener(self, listener: Emit) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)

    def trace_next_step(self, watcher: Watcher, *, now: bool = False) -> None:
        """Trace the torch calls of one step for `watcher` (see instruments/call_watch.py).

        By default the trace starts when the next backward() returns, so it covers the
        following step's data, forward pass and loss; with `now=True` (for requests made
        after a backward(), e.g. from `on_step`) it starts at once. Either way it ends when
        the next backward() starts, and the watcher's `done()` is called.
        """
        if now and self.backward.current is None:
            if self._trace is None:
                self._trace = OpTrace([])
                self._trace.begin()
            self._trace.add(watcher)
        elif watcher not in self._pending_traces:
            self._pending_traces.append(watcher)

    def replayed(self, tensor: torch.Tensor, watchers: Iterable[Watcher] = ()) -> torch.Tensor | None:
        """`tensor`, an output of the last compiled module called, as the module's eager forward
        makes it (with an autograd graph of real ops, not one compiled node): the forward is
        replayed privately (`replay`), seen by `watchers`. None when it cannot be."""
        last = self._last_compiled
        if last is None:
            return None
        ref, args, kwargs, outputs = last
        index = next((i for i, output in enumerate(outputs) if output() is tensor), None)
        module, real_args, real_kwargs = ref(), strong(args), strong(kwargs)
        if index is None or module is None or real_args is None or real_kwargs is None:
            return None
        trace = OpTrace(list(watchers)) if watchers else None
        replayed = tensors_in(self.replay(module, real_args, real_kwargs, trace))
        return replayed[index] if index < len(replayed) else None

    def replay(self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], trace: OpTrace | None = None) -> Any:
        """The module's forward once more, eagerly (a compiled module's own), seen by `trace` and
        by nothing else of torchdoctor, changing nothing of the run (observe/replay.py); None when
        it raises."""
        if self._replaying:
            return None
        try:
            with self.privately(module) as model:
                if trace is not None:
                    trace.resume()
                try:
                    return model(*args, **kwargs)
                finally:
                    if trace is not None:
                        trace.leave()
        except Exception:  # noqa: BLE001 - a forward that cannot be replayed tells nothing
            return None

    @contextlib.contextmanager
    def privately(self, module: nn.Module) -> Iterator[nn.Module]:
        """A context to run `module` (its eager module, when compiled: the one handed out) once
        more without changing the run (observe/replay.py): torchdoctor's hooks and traces set aside
        and its detectors told nothing, forked RNG, buffers swapped for copies, prints dropped."""
        self._replaying = True
        try:
            with self._outside(), untouched(module), contextlib.redirect_stdout(io.StringIO()):
                yield eager(module)
        finally:
            self._replaying = False

    def set_aside(self, mode: Any) -> None:
        """Also take `mode` (with `leave() -> bool` and `resume()`) off the stack while compiled
        code runs, as the session's own trace is (see `_outside`); `mode.leave()` returning
        False means it was not on it. Undone with `stop_setting_aside(mode)`."""
        if mode not in self._aside:
            self._aside.append(mode)

    def stop_setting_aside(self, mode: Any) -> None:
        if mode in self._aside:
            self._aside.remove(mode)

    def hold(self, handle: Any) -> None:
        """Keep a hook handle (anything with `.remove()`) to be removed when the session ends."""
        self._patches.hold(handle)

    def instrument(self, kind: type[T]) -> T:
        """The session's one instance of an on-demand instrument (`kind()` with an
        `install(patches)` method), installed on first request and undone with the session."""
        found = self._instruments.get(kind)
        if found is None:
            found = self._instruments[kind] = kind()
            found.install(self._patches)  # type: ignore[attr-defined]
        return found

    def installed(self, kind: type[T]) -> T | None:
        """The session's instrument of this kind if a detector requested it (never installs one)."""
        return self._instruments.get(kind)

    @property
    def steps(self) -> int:
        """Optimizer steps completed so far (all optimizers)."""
        return self.optimizers.total_steps

    def next_seq(self) -> int:
        self.seq += 1
        return self.seq

    def stats(self) -> dict[str, int]:
        return {
            "steps": self.optimizers.total_steps,
            "backward": self.backward.completed,
            "optimizers": len(self.optimizers.known),
            "models": len(self.modules.live_roots()),
        }

    def model_roots(self) -> list[nn.Module]:
        """The models: top-level modules seen running that have parameters."""
        return [root for root in self.modules.live_roots() if any(True for _ in root.parameters())]

    # -- wiring -------------------------------------------------------------------------------

    def _wanted(self, cls: type[Detector]) -> bool:
        return not cls.rules or any(self.enabled(rule) for rule in cls.rules)

    def _supported(self, cls: type[Detector]) -> bool:
        """False, with a notice, for a detector this torch lacks an API for (Detector.unsupported)."""
        reason = cls.unsupported()
        if reason and reason not in self.notices:
            self.notices.append(reason)
        return not reason

    def _wire(self) -> None:
        self._by_event: dict[str, tuple[Callable[..., None], ...]] = {
            event: tuple(getattr(d, event) for d in self.detectors if overridden(d, event)) for event in EVENTS
        }

    def _has(self, event: str) -> bool:
        return bool(self._by_event.get(event))

    def _dispatch(self, event: str, payload: Any = None) -> None:
        if self._replaying:
            return
        if self.cost is not None or torch.autograd._profiler_enabled():
            for method in self._by_event[event]:
                self._call(method, payload) if payload is not None else self._call(method)
            return
        args = () if payload is None else (payload,)
        for method in self._by_event[event]:  # `_call` inlined: every step pays this loop, for every detector
            try:
                method(*args)
            except Exception as exc:  # noqa: BLE001 - a detector's bug must never stop the training run
                self._step_aside(method, exc)

    def _call(self, method: Callable[..., None], *args: Any) -> None:
        try:
            if torch.autograd._profiler_enabled():  # `trace`: the detectors' torch calls are not the user's time
                with _RecordFunctionFast(OWN):
                    method(*args)
            elif self.cost is not None:
                self.cost.timed(type(method.__self__).__name__, method.__name__, method, *args)  # type: ignore[attr-defined]
            else:
                method(*args)
        except Exception as exc:  # noqa: BLE001 - a detector's bug must never stop the training run
            self._step_aside(method, exc)

    def _step_aside(self, method: Callable[..., None], exc: Exception) -> None:
        """A detector's method failed: it steps aside for the rest of the run, and the report says so."""
        self._by_event = {event: tuple(m for m in methods if m != method) for event, methods in self._by_event.items()}
        FAULTS.add(f"the detector {type(method.__self__).__name__}.{method.__name__}", exc)  # type: ignore[attr-defined]

    def _fault(self, fault: Fault) -> None:
        """torchdoctor's own failure (see faults.py): a finding with no user line."""
        evidence: dict[str, Any] = {"where": fault.where, "error": fault.error}
        if debugging():
            evidence["traceback"] = fault.traceback
        self.report(INTERNAL_ERROR, at=None, key=fault.where, fields={"where": fault.where, "error": fault.error}, evidence=evidence)

    def _send(self, finding: Finding, key: tuple[Any, ...]) -> None:
        text = repr(key)
        self._emit(finding, text)
        for listener in self._listeners:
            listener(finding, text)

    # -- events from the instruments ----------------------------------------------------------

    def _on_root_call(self) -> None:
        self._forwards_since_backward += 1
        if self._forwards_since_backward > self.IDLE_FORWARDS and self.backward.calls == 0:
            self.modules.stop()  # an inference-only phase: resumes at the first backward()

    def _on_module_call(self, event: ModuleCall) -> None:
        self._dispatch("on_module_call", event)

    def _on_loss(self, event: LossCall) -> None:
        if self._ended_traces:
            self._leave_ended_traces()
        self._dispatch("on_loss", event)

    def _on_loss_end(self, event: LossCall) -> None:
        self._dispatch("on_loss_end", event)

    def _on_backward(self, event: Backward) -> None:
        self._end_trace()
        self.modules.reset_depth()
        self._forwards_since_backward = 0
        if self.warmup:
            if not self.modules.active:
                self.modules.start()
            self.grads.attach(t.grad_fn for t in event.tensors if isinstance(t, torch.Tensor))
        self._dispatch("on_backward", event)

    def _on_backward_end(self, event: Backward) -> None:
        self.last_backward_seq = self.next_seq()
        self.steps_at_last_backward = self.steps
        self.last_backward_root_seq = max(
            (t.grad_fn._sequence_nr() for t in event.tensors if isinstance(t, torch.Tensor) and t.grad_fn is not None), default=-1
        )
        self._dispatch("on_backward_end", event)
        if self.warmup and not self.optimizers.known and self.backward.completed >= self.MANUAL_WARMUP_BACKWARDS:
            self._end_warmup()
        if self._pending_traces:
            if self._trace is None:  # a detector may have started one just now (now=True)
                self._trace = OpTrace([])
                self._trace.begin()
            for watcher in self._pending_traces:
                self._trace.add(watcher)
            self._pending_traces = []

    def _on_zero_grad(self, owner: nn.Module | Optimizer, set_to_none: bool) -> None:
        if self._ended_traces:
            self._leave_ended_traces()
        self.last_zero_grad[id(owner)] = self.next_seq()
        location = None
        if self.warmup:
            location = caller_in_user_code()
            self.zero_grad_calls[owner] = location
            params = params_of(owner) if isinstance(owner, Optimizer) else owner.parameters()
            self.grads.reset(params)
        self._dispatch("on_zero_grad", ZeroGrad(owner, set_to_none, location))

    def _on_step(self, event: Step) -> None:
        if self._ended_traces:
            self._leave_ended_traces()
        if self.warmup:
            self.grads.track(params_of(event.optimizer))
        self._dispatch("on_step", event)

    def _on_step_end(self, event: Step) -> None:
        self.next_seq()
        self._dispatch("on_step_end", event)
        steps = self.optimizers.total_steps
        if self._record is not None and steps & (steps - 1) == 0:
            # at steps 1, 2, 4, 8, ...: what survives when the summary at exit never comes (os._exit)
            self._record({"type": "progress", "steps": steps, "backward": self.backward.completed})
        if self.warmup:
            self.grads.stepped(params_of(event.optimizer))
            stepped = [info.steps for info in self.optimizers.known.values() if info.steps]
            if stepped and min(stepped) >= self.WARMUP_STEPS:
                self._end_warmup()

    def _on_loader_iter(self, event: LoaderIter) -> None:
        self._dispatch("on_loader_iter", event)

    def _on_batch(self, event: Batch) -> None:
        self._dispatch("on_batch", event)

    def _end_warmup(self) -> None:
        self.warmup = False
        self.modules.stop()
        self.grads.stop()
        self._dispatch("on_warmup_end")

    def _end_trace(self) -> None:
        if self._trace is not None:
            trace, self._trace = self._trace, None
            if not trace.end():
                self._ended_traces.append(trace)

    def _compiled_return(self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], output: Any, seconds: float) -> None:
        """A compiled module returned. Its ops ran where no trace sees them: during a traced
        step, its forward is replayed eagerly under the trace, so the watchers see them."""
        self.modules.compiled_return(module, args, kwargs, output)
        self._last_compiled = (weakref.ref(module), weak(args), weak(kwargs), [weakref.ref(t) for t in tensors_in(output)])
        if self._trace is not None and self._trace.active:
            self.replay(module, args, kwargs, self._trace)
        if self._has("on_compiled_call"):
            index = self._compiled_calls[module] = self._compiled_calls.get(module, 0) + 1
            self._dispatch("on_compiled_call", CompiledCall(module, args, kwargs, output, seconds, index))

    @contextlib.contextmanager
    def _outside(self) -> Iterator[None]:
        """None of torchdoctor's hooks or modes while compiled code runs (instruments/compiled.py)."""
        self._leave_ended_traces()
        trace = self._trace if self._trace is not None and self._trace.leave() else None
        aside = [mode for mode in self._aside if mode.leave()]
        with self.modules.hidden():
            try:
                yield
            finally:
                for mode in reversed(aside):
                    mode.resume()
                if trace is not None:
                    trace.resume()

    def _leave_ended_traces(self) -> None:
        """Take off the mode stack the traces that ended while torch had them off it."""
        self._ended_traces = [trace for trace in self._ended_traces if not trace.leave()]

