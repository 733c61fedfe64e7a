"""Out of memory, explained: who took the memory at the failing line, and the cheapest fix that fits.

CUDA ("CUDA out of memory. Tried to allocate ...", `torch.OutOfMemoryError`) and CPU
("DefaultCPUAllocator: can't allocate memory: you tried to allocate N bytes", for instance under
`torchdoctor run --memory-limit`). With the memory account (observe/detectors/memory_account.py)
the finding gives the breakdown at the failing line (a census taken from the failing frames:
parameters, gradients, optimizer state, activations by module, the batch, what the user's code
keeps), the largest tensors with the line that makes them, fragmentation where the message
shows it, and the cheapest fix whose estimated saving covers what was missing. Without an
account (no session), the message alone: a request larger than the device is a shape mistake;
reserved-but-unused memory is fragmentation.

torch is only touched when the program imported it.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from torchdoctor.core.locate import display_path, is_user_file
from torchdoctor.core.wording import size_text
from torchdoctor.introspect.source import child_built_at
from torchdoctor.observe.crash.describe import torch_module
from torchdoctor.observe.crash.explain import Explanation
from torchdoctor.observe.crash.model import Crash
from torchdoctor.observe.events import Location
from torchdoctor.rules.memory.out_of_memory import RULE as OOM

if TYPE_CHECKING:
    from torchdoctor.observe.memory.census import Census
    from torchdoctor.observe.observed import Observed

_CUDA_OOM = re.compile(r"CUDA out of memory\. Tried to allocate (?P<want>[\d.]+ \w+)")
_CUDA_TOTAL = re.compile(r"total capacity of (?P<total>[\d.]+ \w+) of which (?P<free>[\d.]+ \w+) is free")
_CUDA_RESERVED = re.compile(r"(?P<allocated>[\d.]+ \w+) is allocated by PyTorch, and (?P<reserved>[\d.]+ \w+) is reserved by PyTorch but unallocated")
_CPU_OOM = re.compile(r"DefaultCPUAllocator: can't allocate memory: you tried to allocate (?P<bytes>\d+) bytes")
_UNITS = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}
#: a single CPU request above this is a shape mistake, whatever the machine
HUGE_CPU_REQUEST = 2**36
_ORDER = ("parameters", "gradients", "optimizer", "activations", "batch", "dataset", "other")
_WORDS = {"parameters": "parameters", "gradients": "gradients", "optimizer": "optimizer state", "activations": "activations",
          "batch": "the data batch", "dataset": "in-memory datasets", "other": "other tensors"}


@dataclass(frozen=True)
class Request:
    """What the message says: how much was asked, of what, and how much was free."""

    want: str
    wanted: float | None
    device: str
    total: float | None
    free: float | None
    fragmented: bool
    cuda: bool


@dataclass(frozen=True)
class Fix:
    """One of TD424's fixes (its `FIXES` kind), the facts its sentence names, and what it saves."""

    kind: str
    fields: dict[str, str]
    saving: float


def out_of_memory(crash: Crash, session: Observed | None) -> Explanation | None:
    request = _request(crash)
    if request is None:
        return None
    huge = request.wanted is not None and (
        (request.total is not None and request.wanted > request.total / 2) or (not request.cuda and request.wanted > HUGE_CPU_REQUEST))
    census = None if huge else _account(crash, session)
    evidence: dict[str, Any] = {}
    fields: dict[str, Any] = {}
    variant: str | None
    if huge:
        held, variant = _held(session), "huge"
    elif census is not None:
        held = _breakdown(census, session.model_roots() if session is not None else [])
        variant, fields = _cheapest(census, request, session)
        evidence = {"owners": dict(census.owners), "activations": dict(census.activations),
                    "largest": [{"bytes": t.nbytes, "owner": t.owner, "what": t.what} for t in census.largest[:5]]}
    else:
        held, variant = _held(session), "fragmented" if request.fragmented else None
    return Explanation(OOM, {"want": request.want, "device": request.device, "held": held} | fields, variant=variant,
                       evidence=evidence or None)


def _request(crash: Crash) -> Request | None:
    cuda = _CUDA_OOM.search(crash.message)
    cpu = _CPU_OOM.search(crash.message)
    if cuda is None and cpu is None and crash.exc_type != "OutOfMemoryError":
        return None
    reserved = _CUDA_RESERVED.search(crash.message)
    fragmented = reserved is not None and _bytes(reserved["reserved"]) > _bytes(reserved["allocated"]) / 4
    if cuda is not None:
        total = _CUDA_TOTAL.search(crash.message)
        device = f"the GPU ({total['total']} in total, {total['free']} free)" if total else "the GPU"
        return Request(cuda["want"], _bytes(cuda["want"]), device, _bytes(total["total"]) if total else None,
                       _bytes(total["free"]) if total else None, fragmented, True)
    if cpu is not None:
        wanted = int(cpu["bytes"])
        limit, free = _cpu_room()
        if free is not None and free >= wanted:
            free = None  # what was free at the failure is not what is free now (temporaries were released)
        room = f" ({size_text(free)} free)" if free is not None else ""
        device = f"the process under its {size_text(limit)} memory limit{room}" if limit else "the machine"
        return Request(size_text(wanted), wanted, device, limit, free, False, False)
    return Request("more memory", None, "the device", None, None, fragmented, False)


def _cpu_room() -> tuple[float | None, float | None]:
    """The data-segment limit (`--memory-limit`, `ulimit -d`) and what is left of it, or the
    machine's available memory."""
    from torchdoctor.observe.memory.process import available, status

    try:
        import resource

        soft, _hard = resource.getrlimit(resource.RLIMIT_DATA)
        infinite = resource.RLIM_INFINITY
    except (ImportError, ValueError, OSError):
        soft = infinite = -1
    if soft != infinite and soft > 0:
        used = status().get("VmData")
        return float(soft), float(max(soft - used, 0)) if used is not None else None
    return None, available()


def _account(crash: Crash, session: Observed | None) -> Census | None:
    """A census at the failing line: the failing frames' variables are roots, and the graph their
    tensors carry (the forward pass so far) is counted as activations."""
    torch = torch_module()
    if session is None or torch is None:
        return None
    from torchdoctor.introspect.frames import read_locals
    from torchdoctor.observe.memory import census as censuses
    from torchdoctor.observe.memory import paths
    from torchdoctor.observe.memory.state import MemoryState

    state = session.installed(MemoryState)
    if state is None or state.sources is None:
        return None
    extra: list[tuple[Any, Any]] = []
    roots: list[Any] = []
    for frame in reversed(crash.frames):
        if frame.live is None:
            continue
        code = frame.live.f_code
        where = (code.co_filename, code.co_firstlineno, code.co_name)
        user = is_user_file(frame.file)
        for name, value in read_locals(frame.live).items():
            if user:
                extra.append(((paths.Step(paths.LOCAL, name, where),), value))
            if isinstance(value, torch.Tensor) and value.grad_fn is not None:
                roots.append(value.grad_fn)  # the forward pass so far (torch's frames hold it too: `input`)
    try:
        sources = state.sources(extra=extra, graph_roots=roots, recorder=state.recorder or state.last_recorder)
        census = censuses.take(session.steps + 1, "crash", sources)
    except MemoryError:  # nothing left even for the account: the last census will do
        return state.timeline.last
    state.timeline.census(census, full=False)  # the account up to the crash, in the report
    previous = max((c for c in state.timeline.censuses if c.phase == "forward"), key=lambda c: c.total, default=None)
    if previous is not None and previous.owners.get("activations", 0) > census.owners.get("activations", 0):
        census.activations = dict(previous.activations)  # a whole forward pass, not the part before the failure
        census.owners["activations"] = previous.owners["activations"]
    return census


def _breakdown(census: Census, models: list[Any]) -> str:
    parts = [f"{_WORDS[owner]} {size_text(census.owners[owner])}" for owner in _ORDER if census.owners.get(owner)]
    text = f"; at this line the tensors hold {size_text(census.total)}: " + ", ".join(parts)
    if census.activations:
        modules = sorted(census.activations.items(), key=lambda kv: -kv[1])[:3]
        text += " (activations: " + ", ".join(f"{name} {size_text(size)}" for name, size in modules) + ")"
    largest = [t for t in census.largest if t.nbytes >= census.total / 20][:3]
    if largest:
        text += "; largest: " + ", ".join(f"{t.what}{_made_at(t.what, models)} {size_text(t.nbytes)}" for t in largest)
    return text


def _made_at(what: str, models: list[Any]) -> str:
    """` (model.py:12)`: the line that makes the named thing: for a parameter or buffer of a model
    (`0.fc1.weight`), the `self.fc1 = ...` of the class that holds that very layer; otherwise the
    first assignment of the name in the user's files (`history` of `history[3]`)."""
    names = re.findall(r"`([^`]+)`", what)
    found = _layer_built_at(names[0], models) if names else None
    if found is None:
        first = next((part for part in re.split(r"[.\[\]]", names[0]) if part.isidentifier()), "") if names else ""
        found = _assignment(first) if first else None
    return f" ({display_path(found[0])}:{found[1]})" if found is not None else ""


def _layer_built_at(name: str, models: list[Any]) -> Location | None:
    """Where the layer owning the parameter or buffer `name` (`0.fc1.weight`) of one of the
    models is built, from the live modules (a name search would find any class's `fc1`)."""
    path = name.split(".")[:-1]
    for model in models:
        modules = [model]
        for part in path:
            child = getattr(modules[-1], "_modules", {}).get(part)
            if child is None:
                break
            modules.append(child)
        else:
            for owner, child in zip(reversed(modules[:-1]), reversed(modules[1:])):
                built = child_built_at(owner, child)
                if built is not None:
                    return built
    return None


def _assignment(name: str) -> Location | None:
    from torchdoctor.observe.memory.holders import user_trees

    for filename, tree in user_trees():
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if (isinstance(target, ast.Attribute) and target.attr == name) or (isinstance(target, ast.Name) and target.id == name):
                        return filename, node.lineno
    return None


def _cheapest(census: Census, request: Request, session: Observed | None) -> tuple[str, dict[str, Any]]:
    """TD424's variant for the least invasive fix whose estimated saving covers what was
    missing (or the two that save most), and the facts it names."""
    if request.fragmented:
        return "fragmented", {}
    missing = request.wanted - request.free if request.wanted is not None and request.free is not None else request.wanted
    if missing is not None and missing <= 0:
        missing = request.wanted
    fixes = _fixes(census, request, session)
    if not fixes:
        return "no-fix", {}
    if not missing:  # the message did not say how much
        return f"fix-{fixes[0].kind}-unsized", fixes[0].fields | {"saving": size_text(fixes[0].saving)}
    for fix in fixes:
        if fix.saving >= missing:
            return f"fix-{fix.kind}", fix.fields | {"saving": size_text(fix.saving), "missing": size_text(missing)}
    if len(fixes) == 1:
        return f"fix-{fixes[0].kind}-short", fixes[0].fields | {"saving": size_text(fixes[0].saving), "missing": size_text(missing)}
    first, second = sorted(fixes, key=lambda f: -f.saving)[:2]
    return f"fixes-{first.kind}-and-{second.kind}", first.fields | second.fields | {
        "missing": size_text(missing), "first_saving": size_text(first.saving), "second_saving": size_text(second.saving)}


def _fixes(census: Census, request: Request, session: Observed | None) -> list[Fix]:
    owners = census.owners
    activations, batch = owners.get("activations", 0), owners.get("batch", 0)
    gradients, optimizer, params = owners.get("gradients", 0), owners.get("optimizer", 0), owners.get("parameters", 0)
    fixes: list[Fix] = []
    holders = sorted((h for h in census.holders.values() if h.total), key=lambda h: -h.total)
    if holders and holders[0].total >= census.total / 4:
        fixes.append(Fix("stop-keeping", {"holder": holders[0].label}, holders[0].total))
    in_backward = session is not None and session.backward.current is not None
    if gradients and not in_backward:
        fixes.append(Fix("zero-grad", {}, gradients))
    if activations:
        fixes.append(Fix("autocast", {"device_type": "cuda" if request.cuda else "cpu"}, activations / 2))
        fixes.append(Fix("accumulate", {}, (activations + batch) / 2))
        if census.activations:
            block = max(census.activations.items(), key=lambda kv: kv[1])[0]
            fixes.append(Fix("checkpoint", {"block": block}, activations * 2 / 3))
        else:
            fixes.append(Fix("checkpoint-largest", {}, activations * 2 / 3))
    if optimizer >= 1.5 * params > 0:
        fixes.append(Fix("lighter-optimizer", {}, optimizer - params))
    return fixes


def _held(session: Observed | None) -> str:
    """Without an account: what the observed models and optimizers hold."""
    torch = torch_module()
    if session is None or torch is None:
        return ""
    params: dict[int, Any] = {id(p): p for root in session.model_roots() for p in root.parameters()}
    state = 0
    for optimizer in list(session.optimizers.known.keys()):
        for group in optimizer.param_groups:
            for p in group["params"]:
                params.setdefault(id(p), p)
        for values in optimizer.state.values():
            state += sum(v.numel() * v.element_size() for v in values.values() if isinstance(v, torch.Tensor))
    weights = sum(p.numel() * p.element_size() for p in params.values())
    grads = sum(p.grad.numel() * p.grad.element_size() for p in params.values() if p.grad is not None)
    if not weights:
        return ""
    return f"; the model holds {size_text(weights)} of parameters, {size_text(grads)} of gradients and {size_text(state)} of optimizer state"


def _bytes(text: str) -> float:
    number, unit = text.split()
    return float(number) * _UNITS.get(unit, 1)


#: where these explainers are tried: lower first (core/plugins.py)
ORDER = 20
EXPLAINERS = (out_of_memory,)
