"""The compile doctor: graph breaks, recompilations, eager/compiled parity and compile cost.

Graph breaks and recompilations are read from dynamo's own records at the end of the run
(`graph_break_reasons`, `get_compilation_metrics()`): nothing is traced or compiled again.
Parity and speed-up come from one private eager replay of each compiled model, on one of its
first calls after compilation (`session.replay`: forked RNG, copies of the buffers).
"""

from __future__ import annotations

import ast
import linecache
import re
import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
from torch import nn
from torch.nn.modules.dropout import _DropoutNd

from torchdoctor.core.locate import is_user_file
from torchdoctor.core.wording import listing
from torchdoctor.introspect.tensors import tensors_in
from torchdoctor.observe.detector import Detector
from torchdoctor.observe.events import CompiledCall, Location
from torchdoctor.observe.instruments.compiled import CompileSites, eager
from torchdoctor.observe.outcome import Outcome
from torchdoctor.observe.support import place
from torchdoctor.rules.compile.compile_cost import RULE as COST
from torchdoctor.rules.compile.graph_break import RULE as GRAPH_BREAK
from torchdoctor.rules.compile.output_diverges import RULE as DIVERGES
from torchdoctor.rules.compile.recompiles import CALLED_AT, CAUSE_COUNT, CHANGED_AT, READ_AT, SEVERAL_CAUSES
from torchdoctor.rules.compile.recompiles import CAUSES as RECOMPILE_CAUSES
from torchdoctor.rules.compile.recompiles import LIMIT as RECOMPILE_LIMIT
from torchdoctor.rules.compile.recompiles import RULE as RECOMPILES

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Observed

#: how much of an output's scale rounding and kernel reordering explain, by dtype
TOLERANCE = {torch.float64: 1e-6, torch.float32: 1e-3, torch.float16: 5e-2, torch.bfloat16: 5e-2}
#: a module's calls: compilation happens in the first; the outputs are compared from this one on
COMPARED_CALL = 2
#: recompilations of one function that are reported (one is dynamo marking a shape dynamic)
REPORTED_RECOMPILES = 2
#: values of a guarded value shown in a finding (the first ones; the rest are counted)
SHOWN_VALUES = 4


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
    compile_ids: list[str] = field(default_factory=list)  # of the compilations the reasons led to
    gave_up: bool = False
    seconds: float = 0.0


class CompileDoctor(Detector):
    ORDER = 180
    rules = (GRAPH_BREAK, RECOMPILES, DIVERGES, COST)

    def __init__(self, ctx: Observed) -> None:
        super().__init__(ctx)
        self._measured: list[Measured] = []
        self._compared: set[int] = set()
        self._compilations = -1  # dynamo's compilations so far, at the last compiled call
        self._before = _records()  # dynamo's records are the process's: only newer ones are this session's
        self._sites: CompileSites | None = None

    def install(self) -> None:
        self._sites = self.ctx.instrument(CompileSites)  # the calls that compiled, for TD481

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
            sites = self._sites.found() if self._sites is not None else {}
            why, fix, line, causes = plain_recompile(list(zip(frame.compile_ids, frame.reasons)), sites)
            self.ctx.report(
                RECOMPILES, at=line or frame.location or self._model_line() or True, key=frame.name,
                fields={"function": frame.name, "count": frame.compilations, "why": why,
                        "limit": RECOMPILE_LIMIT if frame.gave_up else "", "remedy": fix},
                evidence={"reasons": frame.reasons[:8], "causes": causes},
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
    found: list[Frame] = []
    for metric in metrics:
        key = str(metric.compile_id or "").split("/")[0]
        filename, line, name = metric.co_filename, metric.co_firstlineno, metric.co_name
        frame = frames.get(key)
        if frame is None or (name is not None and str(metric.compile_id).endswith("/0")):  # a new frame (or dynamo was reset)
            if name is None:
                continue
            frame = frames[key] = Frame(name, (filename, line) if filename and line and is_user_file(filename) else None)
            found.append(frame)
        if "recompile limit" in str(metric.fail_reason or "") or "cache_size_limit" in str(metric.fail_reason or ""):
            frame.gave_up = True  # this attempt compiled nothing
            continue
        frame.compilations += 1
        frame.seconds += float(metric.entire_frame_compile_time_s or 0.0)
        if metric.recompile_reason:
            frame.reasons.append(str(metric.recompile_reason))
            frame.compile_ids.append(str(metric.compile_id or ""))
    return found


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
_STACK = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+)', re.M)
_MISMATCH = re.compile(r"tensor '(?P<name>[^']+)' (?P<what>size|stride) mismatch at index (?P<dim>\d+)\. expected (?P<old>\S+), actual (?P<new>\S+)")
_PROPERTY = re.compile(r"tensor '(?P<name>[^']+)' (?P<what>rank|dtype|requires_grad|dispatch key set|.*device index) mismatch\.?"
                       r"(?: expected (?:requires_grad=)?(?P<old>\w+(?:\([^)]*\))?)(?:, actual (?P<new>\w+(?:\([^)]*\))?))?)?", re.I)
_EQUALS = re.compile(r"^(?P<lhs>.+?) == (?P<rhs>.+)$")
_SYMBOLIC = re.compile(r"(?P<name>[\w.\[\]']+)\.(?:size|stride)\(\)\[\d+\]")
_NUMBER = re.compile(r"^-?\d+(?:\.\d*)?(?:e[-+]?\d+)?$")
#: dynamo's names of a frame's locals and globals in older guard texts: L['x'], G['name']
_SCOPE = re.compile(r"\b[LG]\['(?P<name>\w+)'\]")
#: tensor properties: the cause's kind
_PROPERTIES = {"rank": "rank", "dtype": "dtype", "requires_grad": "requires_grad", "dispatch key set": "device"}
#: kinds whose value is a tensor's property (its values are shown old -> new)
_TENSOR_KINDS = ("size", "stride", "rank", "dtype", "device", "requires_grad")


@dataclass
class Cause:
    """One kind of failed guard of a compiled function: what it guards, the values seen, how
    many recompilations it made, and where its value is read, changed and passed."""

    kind: str
    subject: str
    values: dict[str, list[str]] = field(default_factory=dict)  # dim (or "") -> values seen, in order
    count: int = 0
    read_at: Location | None = None  # the line dynamo read the value at (its guard's user stack)
    called_at: Location | None = None  # the user's call that recompiled (CompileSites)
    global_name: bool = False  # a module global (G['name']), not a local

    def add(self, old: str | None, new: str | None = None, dim: str = "") -> None:
        seen = self.values.setdefault(dim, [])
        for value in (old, new):
            if value is not None and value not in seen:
                seen.append(value)

    @property
    def values_text(self) -> str:
        def told(shown: list[str]) -> str:
            if self.kind in _TENSOR_KINDS:
                return " → ".join(shown if len(shown) <= SHOWN_VALUES else [*shown[:SHOWN_VALUES - 1], "...", shown[-1]])
            return listing(shown, SHOWN_VALUES)

        parts = [(f"dim {dim}: " if dim else "") + told(shown) for dim, shown in self.values.items() if shown]
        return "; ".join(parts) or "a different object"


def guard_cause(guard: str) -> tuple[str, str, str | None, str | None, str]:
    """(kind, subject, old value, new value, dim) of one failed guard's text, as torch 2.x
    writes it (`tensor 'x' size mismatch at index 0. expected 2, actual 3`, `self.calls == 1`,
    `GLOBAL_STATE changed: grad_mode`, `2 <= x.size()[0] <= 4`)."""
    guard = _SCOPE.sub(lambda m: m["name"], guard.strip())
    if (match := _MISMATCH.search(guard)) is not None:
        return match["what"], match["name"], match["old"], match["new"], match["dim"]
    if (match := _PROPERTY.search(guard)) is not None:
        what = match["what"].lower()
        kind = _PROPERTIES.get(what, "device")
        old, new = match["old"], match["new"]
        if kind == "device":  # DispatchKeySet(CPU, BackendSelect, ...): the first key is the device's
            old, new = (value.split("(")[-1].split(",")[0].rstrip(")") if value else value for value in (old, new))
        if what.endswith("device index"):  # several GPUs: dynamo's own words
            old, new = guard.split("mismatch", 1)[-1].strip(" .") or None, None
        if kind == "requires_grad" and old is not None and new is None:
            old, new = ("False", "True") if old in ("0", "False") else ("True", "False")
        return kind, match["name"], old, new, ""
    if guard.startswith("GLOBAL_STATE changed"):
        return "global_state", "", guard.partition(":")[2].strip().replace("_", " ") or None, None, ""
    if (match := _SYMBOLIC.search(guard)) is not None:
        return "size", match["name"], guard, None, ""
    if (match := _EQUALS.match(guard)) is not None:
        lhs, rhs = match["lhs"].strip(), match["rhs"].strip()
        if lhs.endswith(".training") and rhs in ("True", "False"):
            return "training", lhs, rhs, None, ""
        if re.fullmatch(r"[\w.]+(?:\[[^\]]*\])*\.\w+", lhs):
            return "attribute", lhs, rhs, None, ""
        if re.fullmatch(r"\w+", lhs) and _NUMBER.match(rhs):
            return "number", lhs, rhs, None, ""
        return "value", lhs, rhs, None, ""
    if "___check_obj_id" in guard or "ID_MATCH" in guard or "___check_type_id" in guard:
        inner = re.search(r"\((?P<subject>[^,()]+)", guard)
        return "value", inner["subject"].strip() if inner else guard, None, None, ""
    return "other", "", guard, None, ""


def recompile_causes(reasons: list[tuple[str, str]], sites: dict[str, Location | None] | None = None) -> list[Cause]:
    """The causes of a function's recompilations, most recompilations first, from dynamo's
    (compile id, recompile reason) records; `sites` are the user's calls that compiled."""
    causes: dict[tuple[str, str], Cause] = {}
    for compile_id, reason in reasons:
        guards = [match["guard"].strip() for match in _GUARD.finditer(reason)] or [reason.splitlines()[0]]
        stack = [(m["file"], int(m["line"])) for m in _STACK.finditer(reason) if is_user_file(m["file"])]
        counted: set[tuple[str, str]] = set()
        for guard in guards:
            if not guard:
                continue
            kind, subject, old, new, dim = guard_cause(guard)
            original = _SCOPE.search(guard)
            cause = causes.get((kind, subject))
            if cause is None:
                cause = causes[(kind, subject)] = Cause(kind, subject, global_name=bool(original and guard.lstrip().startswith("G[")))
            cause.add(old, new, dim)
            if (kind, subject) not in counted:
                counted.add((kind, subject))
                cause.count += 1
                cause.read_at = cause.read_at or (stack[-1] if stack else None)
                cause.called_at = cause.called_at or (sites or {}).get(compile_id)
    return sorted(causes.values(), key=lambda cause: -cause.count)


def changed_at(cause: Cause) -> Location | None:
    """The one line of the user's source that changes the guarded value: an assignment to the
    attribute (not in `__init__`) or to the global, in the files the value is read and passed
    in; the line that reads it when it assigns it too (`self.calls += 1`), else one in the class
    that reads it. None when there is none, or more than one."""
    if cause.kind == "attribute":
        name, attribute = cause.subject.rsplit(".", 1)[-1], True
    elif cause.global_name and re.fullmatch(r"\w+", cause.subject):
        name, attribute = cause.subject, False
    else:
        return None
    files = dict.fromkeys(place[0] for place in (cause.read_at, cause.called_at) if place is not None)
    found = {site: owner for filename in files for site, owner in _assignments(filename, name, attribute).items()}
    if cause.read_at in found:
        return cause.read_at
    reader = next((owner for site, owner in _assignments(cause.read_at[0], "", True, cause.read_at[1]).items()), None) if cause.read_at else None
    for sites in ([site for site, owner in found.items() if reader and owner == reader], list(found)):
        if len(sites) == 1:
            return sites[0]
    return None


def _assignments(filename: str, name: str, attribute: bool, at: int | None = None) -> dict[Location, str | None]:
    """Lines of `filename` that assign `<anything>.name` (outside `__init__`) or, for a global,
    `name` at module level inside a loop or in a function that declares it `global`; each with
    the class it lies in. With `at`, the line `at` instead, whatever it does."""
    try:
        tree = ast.parse("".join(linecache.getlines(filename)))
    except (SyntaxError, ValueError):
        return {}
    found: dict[Location, str | None] = {}

    def targets(node: ast.AST) -> list[ast.expr]:
        if isinstance(node, ast.Assign):
            return [leaf for target in node.targets for leaf in _leaves(target)]
        if isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            return [node.target]
        return []

    def visit(node: ast.AST, function: ast.AST | None, owner: str | None, loop: bool) -> None:
        for child in ast.iter_child_nodes(node):
            line = getattr(child, "lineno", 0)
            if at is not None:
                if line == at and isinstance(child, ast.stmt):
                    found[(filename, line)] = owner
            for target in targets(child) if at is None else ():
                if attribute and isinstance(target, ast.Attribute) and target.attr == name:
                    if not (isinstance(function, ast.FunctionDef) and function.name == "__init__"):
                        found[(filename, line)] = owner
                elif not attribute and isinstance(target, ast.Name) and target.id == name:
                    declared = function is not None and any(
                        isinstance(n, ast.Global) and name in n.names for n in ast.walk(function))
                    if declared or (function is None and loop):
                        found[(filename, line)] = owner
            inner = child if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) else function
            klass = child.name if isinstance(child, ast.ClassDef) else owner
            visit(child, inner, klass, (loop or isinstance(child, (ast.For, ast.While))) and inner is function)

    visit(tree, None, None, False)
    return found


def _leaves(target: ast.expr) -> list[ast.expr]:
    if isinstance(target, (ast.Tuple, ast.List)):
        return [leaf for element in target.elts for leaf in _leaves(element)]
    return [target]


def plain_recompile(reasons: list[tuple[str, str]], sites: dict[str, Location | None] | None = None) -> tuple[str, str, Location | None, list[dict[str, Any]]]:
    """(why the guards failed, in plain words; the fixes; the line of the main cause; the causes
    as data), from dynamo's (compile id, recompile reason) records. Several causes are numbered
    alike in the words and in the fixes."""
    causes = recompile_causes(reasons, sites)
    if not causes:
        what, fix = RECOMPILE_CAUSES["other"]
        return what.format(subject="", values="its guards failed"), _sentence(fix), None, []
    whys: list[str] = []
    fixes: list[str] = []
    places: list[Location | None] = []
    data: list[dict[str, Any]] = []
    total = sum(cause.count for cause in causes)
    for cause in causes:
        what, fix = RECOMPILE_CAUSES[cause.kind]
        fields = {"subject": cause.subject, "values": cause.values_text}
        changed = changed_at(cause)
        location = changed or cause.called_at or cause.read_at
        said_at = CHANGED_AT if changed else CALLED_AT if cause.called_at else READ_AT
        where = said_at.format(place=place(location)) if location else ""
        share = CAUSE_COUNT.format(count=cause.count, total=total) if len(causes) > 1 else ""
        whys.append(what.format(**fields) + (f", {where}" if where else "") + (f" ({share})" if share else ""))
        fixes.append(fix.format(**fields))
        places.append(location)
        data.append({"kind": cause.kind, "subject": cause.subject, "values": cause.values_text, "recompilations": cause.count,
                     "file": location[0] if location else None, "line": location[1] if location else None})
    if len(causes) == 1:
        return whys[0], _sentence(fixes[0]), places[0], data
    why = SEVERAL_CAUSES.format(number=len(causes), causes="; ".join(f"({n}) {text}" for n, text in enumerate(whys, 1)))
    remedy = " ".join(f"({n}) {_sentence(text)}" for n, text in enumerate(fixes, 1))
    return why, remedy, places[0], data


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")

