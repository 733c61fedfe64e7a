"""The memory account of a run: where the memory went, step by step, by owner.

Every step: the cheap signals (resident memory; each CUDA device's allocated, reserved and
peak bytes) go into the timeline. On the first FULL_STEPS steps a census is taken at the end
of each phase: the end of the forward pass (when backward() is called: the activations it
saved, by the module that saved them), the end of backward() and the end of the optimizer
step. Later, a census at the end of steps 8, 16, 32, ... (powers of two), and at the end of any
step after which memory grew by GROWTH since the last census. Each census goes to the
listeners (the leak detectors) and, under `torchdoctor run`, into the run's records, so a
script that dies mid-run keeps its account up to its last census.

Nothing here reports a finding: the account is the report's `memory` section and the table
`torchdoctor run --memory` prints. The state is the session's `MemoryState` instrument, which
crash explanations (out of memory) read.
"""

from __future__ import annotations

import sys
import weakref
from typing import TYPE_CHECKING, Any

from torchdoctor.introspect.tensors import tensors_in
from torchdoctor.observe.detector import Detector
from torchdoctor.observe.events import Backward, Batch, LossCall, Step
from torchdoctor.observe.instruments.modules import SpanRecorder
from torchdoctor.observe.memory.census import Sources
from torchdoctor.observe.memory.process import Resident, allocators
from torchdoctor.observe.memory.state import FULL_STEPS, GROWTH, GROWTH_FRACTION, MemoryState
from torchdoctor.observe.memory.storages import is_tensor
from torchdoctor.observe.outcome import Outcome

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Observed

class MemoryAccount(Detector):
    """Keeps the memory account (see the module's doc); reports nothing itself."""

    ORDER = 380  # before the detectors that read its account (memory_leaks, memory_deleted)
    rules = ()

    def __init__(self, ctx: Observed) -> None:
        super().__init__(ctx)
        self.state: MemoryState | None = None
        self._resident = Resident()
        self._target: weakref.ref[Any] | None = None
        self._loaded: list[weakref.ref[Any]] = []  # the tensors of the last batch a DataLoader gave
        self._last_census_step = 0
        self._last_census_signal = 0
        self._recorded_step = -1

    # -- events ------------------------------------------------------------------------------

    def install(self) -> None:
        state = self.state = self.ctx.instrument(MemoryState)
        state.sources = self._sources
        state.recorder = self.ctx.modules.record_spans()
        self.ctx.hold(self)  # `remove()`: the session ends

    def on_batch(self, event: Batch) -> None:
        self._loaded = [weakref.ref(t) for t in tensors_in(event.batch)]

    def on_loss(self, event: LossCall) -> None:
        target = event.target
        self._target = weakref.ref(target) if is_tensor(target) else None

    def on_backward(self, event: Backward) -> None:
        state = self.state
        if state is None or state.recorder is None:
            return
        step = self._step() + 1
        roots = [t.grad_fn for t in event.tensors if getattr(t, "grad_fn", None) is not None]
        census = state.take(step, "forward", True, graph_roots=roots, frame=sys._getframe(1), recorder=state.recorder)
        if census is not None:
            names = set(census.batch_names)
            state.batch_names = names if state.batch_names is None else state.batch_names & names
        self._device_peak("forward", step)
        state.recorder.stop()
        state.recorder, state.last_recorder = None, state.recorder

    def on_backward_end(self, event: Backward) -> None:
        if not self.ctx.optimizers.known:  # weights updated by hand: each backward() is a step
            self._step_end(self.ctx.backward.completed)
            return
        if self._step() < FULL_STEPS and self.state is not None:
            self.state.take(self._step() + 1, "backward", True, frame=sys._getframe(1))
            self._device_peak("backward", self._step() + 1)

    def on_step_end(self, event: Step) -> None:
        self._step_end(self.ctx.steps)

    def on_finish(self, outcome: Outcome) -> None:
        if self.state is not None:
            self.remove()
            self._write(final=True, outcome=outcome)
        self._resident.close()

    def remove(self) -> None:
        """Stop recording module spans (the run ended, or the session is undone)."""
        state = self.state
        if state is not None and state.recorder is not None:
            state.recorder.stop()
            state.recorder = None

    # -- the account ---------------------------------------------------------------------------

    def _step(self) -> int:
        return self.ctx.steps if self.ctx.optimizers.known else self.ctx.backward.completed

    def _step_end(self, step: int) -> None:
        state = self.state
        if state is None or step <= self._recorded_step:
            return  # counted already (a backward() taken for a step before the optimizer was seen)
        self._recorded_step = step
        rss = self._resident.read()
        state.allocators = allocators()
        state.timeline.add(step, rss, state.allocators)
        signal = sum(f.allocated for f in state.allocators) if state.allocators else (rss or 0)
        full = step <= FULL_STEPS
        if full or _scheduled(step) or self._grew(step, signal):
            state.take(step, "step", full, frame=sys._getframe(2))
            self._device_peak("step", step)
            self._last_census_step, self._last_census_signal = step, signal
            self._write()
        if step < FULL_STEPS and state.recorder is None:
            state.recorder = self.ctx.modules.record_spans()  # the next forward's modules
        elif step >= FULL_STEPS and state.last_recorder is not None and state.last_recorder.spans:
            state.last_recorder.spans = []  # its graph is long gone

    def _grew(self, step: int, signal: int) -> bool:
        if not self._last_census_signal or step - self._last_census_step < max(8, self._last_census_step // 8):
            return False
        grown = signal - self._last_census_signal
        return grown >= GROWTH and grown >= GROWTH_FRACTION * self._last_census_signal

    def _device_peak(self, phase: str, step: int) -> None:
        state = self.state
        if state is None:
            return
        before = {f.device: f.peak for f in state.allocators}
        now = allocators()
        for facts in now:
            if facts.peak > before.get(facts.device, 0):
                state.timeline.device_peak(phase, facts.peak, step)
        state.allocators = now

    def _sources(self, *, frame: Any = None, graph_roots: Any = (), recorder: SpanRecorder | None = None,
                 extra: Any = ()) -> Sources:
        ctx = self.ctx
        # the data: model inputs and loss targets without autograd history (a carried state is not data)
        batch = [t for t in (recorder.inputs if recorder is not None else []) if is_tensor(t) and not t.requires_grad]
        batch.extend(t for t in (ref() for ref in self._loaded) if t is not None)
        target = self._target() if self._target is not None else None
        if target is not None and not target.requires_grad:
            batch.append(target)
        return Sources(
            models=ctx.modules.live_roots(),
            optimizers=list(ctx.optimizers.known.keys()),
            loaders=list(ctx.loaders.iterations.keys()),
            batch=batch,
            batch_names=set(self.state.batch_names or ()) if self.state is not None else set(),
            graph_roots=list(graph_roots),
            module_at=recorder.module_at if recorder is not None else None,
            module_label=self._module_label,
            frame=frame,
            extra=list(extra),
            all_user_modules=ctx.folder is not None,  # None under watch()
        )

    def _module_label(self, module: Any) -> str:
        name = self.ctx.modules.name_of(module)
        kind = type(module).__name__
        return kind if name == kind else f"{kind} `{name}`"

    def _write(self, final: bool = False, outcome: Outcome | None = None) -> None:
        state = self.state
        if state is None:
            return
        data = {"type": "memory", **state.summary()}
        if final:
            data["final"] = True
            data["outcome"] = "crashed" if outcome is not None and outcome.crashed else "completed"
        self.ctx.record(data)


def _scheduled(step: int) -> bool:
    """Steps 8, 16, 32, ...: a census at every doubling of the run."""
    return step >= 8 and step & (step - 1) == 0


