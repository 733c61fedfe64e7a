"""The compile doctor: graph breaks, recompilations, eager/compiled parity and compile cost.

Graph breaks and recompilations are read from dynamo's own records at the end of the run
(`graph_break_reasons`, `get_compilation_metrics()`): nothing is traced or compiled again.
Parity and speed-up come from one private eager replay of each compiled model, on one of its
first calls after compilation (`session.replay`: forked RNG, copies of the buffers).
"""

from __future__ import annotations

import re
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.nn.modules.dropout import _DropoutNd

from torchdoctor.core.locate import is_user_file
from torchdoctor.introspect.tensors import tensors_in
from torchdoctor.rules.compile.compile_cost import RULE as COST
from torchdoctor.rules.compile.graph_break import RULE as GRAPH_BREAK
from torchdoctor.rules.compile.output_diverges import RULE as DIVERGES
from torchdoctor.rules.compile.recompiles import RULE as RECOMPILES
from torchdoctor.run.detector import Detector
from torchdoctor.run.events import CompiledCall, Location
from torchdoctor.run.instruments.compiled import eager
from torchdoctor.run.outcome import Outcome

#: how much of an output's scale rounding and kernel reordering explain, by dtype
TOLERANCE = {torch.float64: 1e-6, torch.float32: 1e-3, torch.float16: 5e-2, torch.bfloat16: 5e-2}
#: a module's calls: compilation happens in the first; the outputs are compared from this one on
COMPARED_CALL = 2
#: recompilations of one function that are reported (one is dynamo marking a shape dynamic)
REPORTED_RECOMPILES = 2


@dataclass
class Measured:
    """A compiled model's forward: compiled and eager wall times on the same input."""

    model: str
    compiled: float
    eager: float


@dataclass
class Frame:
    """One compiled function (a frame dynamo compiled), its compilations and their reasons."""

    name: str
    location: Location | None
    compilations: int = 0
    reasons: list[str] = field(default_factory=list)
    gave_up: bool = False
    seconds: float = 0.0


class CompileDoctor(Detector):
    ORDER = 180
    rules = (GRAPH_BREAK, RECOMPILES, DIVERGES, COST)

    def __init__(self, ctx: Any) -> None:
        super().__init__(ctx)
        self._measured: list[Measured] = []
        self._compared: set[int] = set()
        self._compilations = -1  # dynamo's compilations so far, at the last compiled call
        self._before = _records()  # dynamo's records are the process's: only newer ones are this session's

    def _new(self, records: list[Any]) -> list[Any]:
        return [record for record in records if id(record) not in self._before]

    def on_compiled_call(self, event: CompiledCall) -> None:
        """Compare a compiled model with its eager forward on its first call that compiled
        nothing (the timing of a call that compiled is the compiler's)."""
        if id(event.module) in self._compared:
            return
        compilations = _compilations()
        compiled_now, self._compilations = compilations != self._compilations, compilations
        if event.index >= COMPARED_CALL and not compiled_now:
            self._compared.add(id(event.module))
            self._compare(event)

    def on_finish(self, outcome: Outcome) -> None:
        reasons, metrics = _dynamo_records()
        self._graph_breaks(self._new(reasons))
        frames = _frames(self._new(metrics))
        self._recompiles(frames)
        self._cost(frames)

    # -- parity and speed ---------------------------------------------------------------------

    def _compare(self, event: CompiledCall) -> None:
        model = eager(event.module)
        outputs = [t for t in tensors_in(event.output) if t.is_floating_point()]
        started = time.perf_counter()
        replayed = tensors_in(self.ctx.replay(event.module, event.args, event.kwargs))
        seconds = time.perf_counter() - started
        if len(replayed) != len(tensors_in(event.output)) or not outputs:
            return
        self._measured.append(Measured(type(model).__name__, event.seconds, seconds))
        if _draws_random_numbers(model):
            return  # dropout draws differ between eager and compiled code by design
        replayed = [t for t in replayed if t.is_floating_point()]
        for index, (compiled, expected) in enumerate(zip(outputs, replayed)):
            if compiled.shape != expected.shape:
                continue
            a, b = compiled.detach().double(), expected.detach().double()
            diff = float((a - b).abs().max()) if a.numel() else 0.0
            scale = max(float(b.abs().max()) if b.numel() else 0.0, 1e-6)
            tolerance = TOLERANCE.get(compiled.dtype, 5e-2)
            if diff / scale > tolerance:
                name = "its output" if len(outputs) == 1 else f"output {index}"
                self.ctx.report(
                    DIVERGES, at=self.ctx.modules.roots.get(event.module) or True, key=id(event.module),
                    fields={"model": type(model).__name__, "output": name, "diff": diff, "relative": diff / scale,
                            "dtype": str(compiled.dtype).replace("torch.", ""), "tolerance": tolerance},
                    evidence={"max_abs_diff": diff, "scale": scale},
                )
                return

    # -- dynamo's records ---------------------------------------------------------------------

    def _graph_breaks(self, reasons: list[Any]) -> None:
        seen: set[tuple[Any, ...]] = set()
        for reason in reasons:
            if not getattr(reason, "graph_break", True):
                continue
            at = _user_line(getattr(reason, "user_stack", []) or [])
            text = str(getattr(reason, "reason", ""))
            what, rewrite = plain_break(text)
            key = (at, what)
            if at is None or key in seen:
                continue
            seen.add(key)
            self.ctx.report(GRAPH_BREAK, at=at, key=what, fields={"what": what, "rewrite": rewrite},
                            evidence={"reason": text.splitlines()[0] if text else ""})

    def _recompiles(self, frames: list[Frame]) -> None:
        for frame in frames:
            recompiles = frame.compilations - 1
            if recompiles < REPORTED_RECOMPILES and not frame.gave_up:
                continue
            why, fix = plain_recompile(frame.reasons)
            limit = ("; it reached dynamo's recompile limit and now runs without compilation" if frame.gave_up else "")
            self.ctx.report(
                RECOMPILES, at=frame.location or self._model_line() or True, key=frame.name,
                fields={"function": frame.name, "count": frame.compilations, "why": why, "limit": limit,
                        "remedy": fix}, evidence={"reasons": frame.reasons[:8]},
            )

    def _cost(self, frames: list[Frame]) -> None:
        seconds = sum(frame.seconds for frame in frames)
        if not frames:
            return
        speed = ""
        if self._measured:
            measured = self._measured[0]
            ratio = measured.eager / measured.compiled if measured.compiled > 0 else 0.0
            saved = measured.eager - measured.compiled
            speed = f"; `{measured.model}`'s forward takes {measured.compiled * 1e3:.2f} ms compiled vs {measured.eager * 1e3:.2f} ms eager ({ratio:.2f}x)"
            speed += f", so compiling pays for itself after about {seconds / saved:,.0f} forward passes" if saved > 0 else ", so at this size compiling does not pay for itself"
        self.ctx.report(COST, at=frames[0].location or self._model_line() or True, key="cost",
                        fields={"seconds": seconds, "regions": len(frames), "speed": speed},
                        evidence={"compile_seconds": round(seconds, 3), "regions": len(frames)})

    def _model_line(self) -> Location | None:
        return next((line for module, line in self.ctx.modules.roots.items() if line is not None and type(module).__name__ == "OptimizedModule"), None)


def _dynamo_records() -> tuple[list[Any], list[Any]]:
    """dynamo's graph-break reasons and compilation metrics (empty when nothing was compiled)."""
    utils = sys.modules.get("torch._dynamo.utils")
    if utils is None:
        return [], []
    metrics = utils.get_compilation_metrics() if hasattr(utils, "get_compilation_metrics") else []
    return list(getattr(utils, "graph_break_reasons", [])), list(metrics)


def _records() -> dict[int, Any]:
    """The records so far, by id (held, so that no new record can reuse an id)."""
    reasons, metrics = _dynamo_records()
    return {id(record): record for record in (*reasons, *metrics)}


def _compilations() -> int:
    """Frames dynamo has compiled (or tried to) so far in this process."""
    utils = sys.modules.get("torch._dynamo.utils")
    return int(utils.counters["frames"]["total"]) if utils is not None else 0


def _frames(metrics: list[Any]) -> list[Frame]:
    """dynamo's compilation records, by compiled function, in order. A record's compile id is
    "frame/attempt" ("0/3"); the attempt that hits the recompile limit names no code."""
    frames: dict[str, Frame] = {}
    for metric in metrics:
        key = str(metric.compile_id or "").split("/")[0]
        filename, line, name = metric.co_filename, metric.co_firstlineno, metric.co_name
        frame = frames.get(key)
        if frame is None:
            if name is None:
                continue
            frame = frames[key] = Frame(name, (filename, line) if filename and line and is_user_file(filename) else None)
        if "recompile limit" in str(metric.fail_reason or "") or "cache_size_limit" in str(metric.fail_reason or ""):
            frame.gave_up = True  # this attempt compiled nothing
            continue
        frame.compilations += 1
        frame.seconds += float(metric.entire_frame_compile_time_s or 0.0)
        if metric.recompile_reason:
            frame.reasons.append(str(metric.recompile_reason))
    return list(frames.values())


def _user_line(stack: list[Any]) -> Location | None:
    found = None
    for summary in stack:
        if is_user_file(summary.filename) and summary.lineno:
            found = (summary.filename, int(summary.lineno))
    return found


def _draws_random_numbers(model: nn.Module) -> bool:
    return any(isinstance(m, _DropoutNd) and m.training and m.p > 0 for m in model.modules())


def plain_break(reason: str) -> tuple[str, str]:
    """(what broke the graph, in plain words; the rewrite that removes it)."""
    hints = [line.strip()[len("Hint:"):].strip() for line in reason.splitlines() if line.strip().startswith("Hint:")]
    if "Tensor.item()" in reason or "item()" in reason:
        return ("`.item()` turns a tensor into a Python number inside the compiled code",
                "Keep the value a tensor (`torch.where`, tensor arithmetic), move the `.item()` out of the compiled function (log after the step), or set `torch._dynamo.config.capture_scalar_outputs = True`.")
    if "generic_jump" in reason or "data-dependent" in reason.lower() or "Data-dependent" in reason:
        return ("a Python `if`/`while` on a tensor's value: dynamo cannot know which way it goes",
                "Write the branch as a tensor op (`torch.where(cond, a, b)`, `torch.cond`), or decide it outside the compiled code.")
    if "`print`" in reason or "builtin `print`" in reason or "print" in reason.split("\n")[0]:
        return ("`print` inside the compiled code",
                "Remove the print or move it out of the compiled function (after the step); "
                "`torch._dynamo.config.reorderable_logging_functions.add(print)` lets dynamo defer it.")
    if "numpy" in reason.lower() and "tensor" in reason.lower():
        return ("a conversion between tensors and NumPy arrays inside the compiled code", "Do the computation with torch ops, or outside the compiled function.")
    first = next((line.strip() for line in reason.splitlines() if line.strip()), "an operation dynamo cannot trace")
    explanation = next((line.strip()[len("Explanation:"):].strip() for line in reason.splitlines() if line.strip().startswith("Explanation:")), "")
    what = f"{first}" + (f" ({explanation.rstrip('.')})" if explanation else "")
    return what, hints[0] if hints else "Move this call out of the compiled function, or replace it with torch ops dynamo can trace."


_GUARD = re.compile(r"^\s*\d+/\d+:\s*(?P<guard>.*?)(?:\s{2,}#.*)?$", re.M)


def plain_recompile(reasons: list[str]) -> tuple[str, str]:
    """(why the guard failed, in plain words; the fix), from dynamo's recompile reasons."""
    guards = [match["guard"].strip() for reason in reasons for match in _GUARD.finditer(reason)] or [r.splitlines()[0] for r in reasons if r]
    text = " ".join(guards)
    shown = "; ".join(dict.fromkeys(guards[:3]))
    if "size mismatch" in text or "stride mismatch" in text:
        return (f"the input's shape changes between calls ({shown})",
                "Compile with `dynamic=True`, or mark the changing dimension with `torch._dynamo.mark_dynamic(x, dim)`; for a short last batch, `drop_last=True`.")
    if "requires_grad" in text:
        return (f"an input's requires_grad changes between calls ({shown})", "Give the compiled function inputs with the same requires_grad every call (detach the ones that need no gradient).")
    if "grad_mode" in text or "GRAD_MODE" in text:
        return (f"autograd is turned on and off between calls ({shown})", "Compile the training and the evaluation calls as separate functions, or keep `torch.no_grad()` outside the compiled code.")
    if "training" in text:
        return (f"the model switches between train() and eval() ({shown})", "Compile one copy for training and one for evaluation, or evaluate eagerly.")
    if "==" in text or "___check_obj_id" in text or "ID_MATCH" in text:
        return (f"a Python value it reads is different on each call ({shown}): every new value is a new compilation",
                "Pass a changing number as a tensor (`torch.tensor(value)`), keep strings and other Python objects the same across calls, or move them out of the compiled function.")
    return (shown or "its guards failed", "Run with `TORCH_LOGS=recompiles` to see each failed guard, and keep what it checks the same across calls.")
