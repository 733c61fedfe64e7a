"""The ops whose gradient is infinite at a point of their input (sqrt at 0, pow with an
exponent below 1 at 0, acos at -1 and 1, log at 0, a division by 0), seen where the user's
code calls them, wherever that is: in a plain function, a lambda, a loss module, the training
loop, a custom `autograd.Function`'s forward.

The replay of a model's forward (numerics.py) cannot see the code between the model's output
and the loss, where such ops are written most (distances, norms, contrastive losses). So,
during the warm-up steps only, that code is traced (the session's one-step `OpTrace`, from the
end of a model's forward to the next backward()): each call of one of these ops is kept with
its user line and its inputs (references, never copies). When the backward() starts, the calls
whose result is not in its graph are dropped (the graph's nodes are compared by identity: no
saved tensor is unpacked); the others are kept until the optimizer step. If that step's
gradients are not finite, `culprit()` re-runs each kept op alone on its recorded inputs, with
autograd, and names the last one (in forward order: its backward runs first) whose gradient
is not finite: the origin, with the input values that explain it. A step without a non-finite
gradient only drops the records; after the warm-up nothing is traced.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import torch

from torchdoctor.introspect.graph import graph_nodes
from torchdoctor.observe.events import Location
from torchdoctor.observe.nan_origin import Operand, operand

#: torch function / Tensor method name -> the kind of singularity its gradient has (a key of TD145's
#: SINGULAR, rules/numerics/non_finite_values.py, which words it)
SINGULAR = {
    "sqrt": "sqrt", "rsqrt": "rsqrt",
    "pow": "pow", "__pow__": "pow", "float_power": "pow",
    "acos": "acos", "arccos": "acos", "asin": "asin", "arcsin": "asin", "atanh": "atanh", "arctanh": "atanh",
    "log": "log", "log2": "log", "log10": "log",
    "div": "div", "divide": "div", "true_divide": "div", "__truediv__": "div", "__rtruediv__": "rdiv", "reciprocal": "reciprocal",
}
#: kept per step, at most (a loss that calls these ops in a loop keeps its first ones)
_MAX_RECORDS = 64
#: nodes of a backward's graph walked to find the recorded results in it, at most
_MAX_NODES = 200_000

@dataclass
class Call:
    """One call of a singular op, as the trace saw it."""

    name: str  # the function's name ("sqrt", "__pow__")
    kind: str  # a value of SINGULAR
    func: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    location: Location | None
    versions: tuple[int, ...]  # of its tensor inputs: an input changed in place since is not re-run
    node: Any = None  # its result's grad_fn, held until the backward() that decides (never after)
    in_function: bool = False  # called with autograd off: only a custom Function's forward counts
    function: str | None = None  # that custom Function's name
    reaches: set[int] | None = None  # ids of the parameters its gradient flows to (None: not known)

    def tensors(self) -> list[torch.Tensor]:
        return [value for value in (*self.args, *self.kwargs.values()) if isinstance(value, torch.Tensor)]


@dataclass
class Origin:
    """A kept call whose gradient, on the inputs it was given, is not finite."""

    call: Call
    #: the input at the singular point (the divisor of a division) and what it holds
    operand: Operand
    #: what it holds there: the name of TD145's HOLDS template ("zeros") and the facts it names ({"count": 64})
    holds: tuple[str, dict[str, Any]]
    function: str | None = None  # the custom autograd.Function whose forward called it
    extra: list[Operand] = field(default_factory=list)

    @property
    def op(self) -> str:
        """`sqrt`, `pow`, `div` (for `/`): the op as the user wrote it."""
        return _SPELLED.get(self.call.name, self.call.name)


_SPELLED = {"__pow__": "pow", "__truediv__": "div", "__rtruediv__": "div", "true_divide": "div", "divide": "div"}


class SingularCalls:
    """The trace's watcher (instruments/call_watch.py), and what was kept of one step."""

    functions = frozenset(SINGULAR)

    def __init__(self) -> None:
        self.pending: list[Call] = []  # seen since the last backward() began
        self.kept: list[Call] = []  # in a graph that a backward() of this step ran through

    # -- the trace ---------------------------------------------------------------------------

    def seen(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any, location: Location | None) -> None:
        if len(self.pending) + len(self.kept) >= _MAX_RECORDS or location is None:
            return
        kind = SINGULAR[name]
        if not _worth_keeping(kind, args, kwargs):
            return
        tensors = [v for v in (*args, *kwargs.values()) if isinstance(v, torch.Tensor)]
        if not tensors or any(t.device.type != "cpu" for t in tensors):
            return
        node = result.grad_fn if isinstance(result, torch.Tensor) else None
        grad_on = torch.is_grad_enabled()
        if node is None and grad_on:
            return  # nothing that needs its gradient
        self.pending.append(Call(name, kind, _unbound(name), tuple(_held(a) for a in args), {k: _held(v) for k, v in kwargs.items()},
                                 location, tuple(t._version for t in tensors), node, in_function=not grad_on))

    def done(self) -> None:
        """The traced span is over (a backward() is starting: `decide` comes next)."""

    # -- the backward() ----------------------------------------------------------------------

    def decide(self, roots: Iterable[Any]) -> None:
        """A backward() starts from `roots`: keep the pending calls whose result is in its graph
        (or, called with autograd off, that ran in the forward of a custom Function in it), with
        the parameters their gradient flows to."""
        if not self.pending:
            return
        pending, self.pending = self.pending, []
        wanted = {id(call.node) for call in pending if call.node is not None}
        found: dict[int, Any] = {}
        functions: dict[int, list[Any]] = {}  # id(Function class) -> its nodes in the graph
        classes: list[type] = []
        for node in graph_nodes(roots, _MAX_NODES):
            if id(node) in wanted:
                found[id(node)] = node
            forward_cls = getattr(node, "_forward_cls", None)
            if isinstance(forward_cls, type):
                if id(forward_cls) not in functions:
                    classes.append(forward_cls)
                functions.setdefault(id(forward_cls), []).append(node)
        budget = [_MAX_NODES]
        for call in pending:
            node, call.node = call.node, None  # the graph's decision is made: hold none of it
            if node is not None and id(node) in found:
                call.reaches = _leaves_below([node], budget)
                self.kept.append(call)
            elif call.in_function:
                owner = _forward_of(call.location, classes)
                if owner is not None:
                    call.function = owner.__name__
                    call.reaches = _leaves_below(functions[id(owner)], budget)
                    self.kept.append(call)

    def clear(self) -> None:
        self.pending, self.kept = [], []

    # -- after the step's gradients turned out non-finite --------------------------------------

    def culprit(self, bad: Iterable[torch.Tensor]) -> Origin | None:
        """The last kept call (in forward order) whose gradient flows to one of the parameters
        `bad` and is not finite on the inputs it was given."""
        wanted = {id(p) for p in bad}
        for call in reversed(self.kept):
            if call.reaches is not None and not call.reaches & wanted:
                continue
            origin = _origin(call)
            if origin is not None:
                origin.function = call.function
                return origin
        return None


def _leaves_below(nodes: list[Any], budget: list[int]) -> set[int] | None:
    """The ids of the leaf tensors (parameters) whose gradient accumulators are below `nodes`;
    None when the walk would pass the budget of nodes left for this backward (then: unknown)."""
    leaves: set[int] = set()
    walked = 0
    for node in graph_nodes(nodes, budget[0] + 1):
        walked += 1
        variable = getattr(node, "variable", None)
        if variable is not None:
            leaves.add(id(variable))
    if walked > budget[0]:
        budget[0] = 0
        return None
    budget[0] -= walked
    return leaves


def _held(value: Any) -> Any:
    """A tensor input as a reference that carries no graph (no copy: the same storage)."""
    return value.detach() if isinstance(value, torch.Tensor) else value


def _unbound(name: str) -> Callable[..., Any]:
    """The op to re-run: `torch.sqrt` for "sqrt", `Tensor.__truediv__` for "__truediv__"."""
    found = getattr(torch, name, None)
    return found if callable(found) and not name.startswith("__") else getattr(torch.Tensor, name)


def _worth_keeping(kind: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Only calls whose gradient can be infinite: a floating base raised to a number below 1 (or
    to a tensor), a division by a floating tensor."""
    values = [*args, *kwargs.values()]
    if kind == "pow":
        base = values[0] if values else None
        exponent = values[1] if len(values) > 1 else None
        if not isinstance(base, torch.Tensor) or not base.is_floating_point():
            return False
        return isinstance(exponent, torch.Tensor) or (isinstance(exponent, (int, float)) and 0 < exponent < 1)
    if kind == "div":
        divisor = values[1] if len(values) > 1 else None
        return isinstance(divisor, torch.Tensor) and divisor.is_floating_point() and "rounding_mode" not in kwargs
    first = values[0] if values else None
    return isinstance(first, torch.Tensor) and first.is_floating_point()


def _forward_of(location: Location | None, functions: Iterable[type]) -> type | None:
    """The custom autograd.Function whose `forward` holds the line `location`."""
    if location is None:
        return None
    for cls in functions:
        code = getattr(getattr(cls, "forward", None), "__code__", None)
        if code is not None and code.co_filename == location[0] and location[1] in {line for *_, line in code.co_lines()}:
            return cls
    return None


def _origin(call: Call) -> Origin | None:
    tensors = call.tensors()
    if tuple(t._version for t in tensors) != call.versions:
        return None  # changed in place since: these are no longer the values it was given
    if any(t.is_floating_point() and not bool(torch.isfinite(t).all()) for t in tensors):
        return None  # a non-finite input: the origin is before this op
    leaves: dict[int, torch.Tensor] = {}

    def leaf(value: Any) -> Any:
        if isinstance(value, torch.Tensor) and value.is_floating_point():
            leaves[id(value)] = fresh = value.detach().requires_grad_(True)
            return fresh
        return value

    args = tuple(leaf(a) for a in call.args)
    kwargs = {k: leaf(v) for k, v in call.kwargs.items()}
    try:
        with torch.enable_grad():
            out = call.func(*args, **kwargs)
            inputs = list(leaves.values())
            grads = torch.autograd.grad(out, inputs, grad_outputs=torch.ones_like(out), allow_unused=True)
    except Exception:  # noqa: BLE001 - an op that cannot be re-run alone says nothing
        return None
    if all(g is None or bool(torch.isfinite(g).all()) for g in grads):
        return None
    values = [*call.args, *call.kwargs.values()]
    singular = values[1] if call.kind == "div" else values[0]
    return Origin(call, operand(singular), _what_it_holds(call.kind, singular),
                  extra=[operand(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)])


def _what_it_holds(kind: str, value: torch.Tensor) -> tuple[str, dict[str, Any]]:
    """The values at the singular point: how many are at it, or how near they come."""
    flat = value.detach().float()
    if kind in ("acos", "asin", "atanh"):
        edges = int((flat.abs() == 1).sum())
        if edges:
            return "at-edges", {"count": edges}
        return "near-edges", {"distance": float((1 - flat.abs()).min())}
    zeros = int((flat == 0).sum())
    if zeros:
        return "zeros", {"count": zeros}
    smallest = float(flat.abs().min())
    return ("small", {"smallest": smallest}) if math.isfinite(smallest) else ("near-zero", {})
