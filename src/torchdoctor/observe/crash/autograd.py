"""Crashes in autograd: in-place changes, freed graphs, losses without a graph, `.numpy()`."""

from __future__ import annotations

import ast
import linecache
import re
from typing import TYPE_CHECKING, Any

from torchdoctor.introspect.source import functions_around, grad_off_block, grad_off_span, module_tree, own_nodes
from torchdoctor.observe.crash.describe import torch_module, user_names
from torchdoctor.observe.crash.explain import Explanation
from torchdoctor.observe.crash.model import Crash, Frame
from torchdoctor.observe.crash.provenance import binding_of
from torchdoctor.observe.events import Location
from torchdoctor.rules.grad_flow.backward_through_freed_graph import RULE as FREED
from torchdoctor.rules.grad_flow.gradient_is_none import RULE as GRAD_NONE
from torchdoctor.rules.grad_flow.saved_tensor_modified_in_place import RULE as INPLACE
from torchdoctor.rules.grad_mode.backward_without_graph import RULE as NO_GRAPH
from torchdoctor.rules.grad_mode.leaf_modified_in_place import RULE as LEAF
from torchdoctor.rules.grad_mode.numpy_of_grad_tensor import RULE as NUMPY
from torchdoctor.rules.loss.backward_of_non_scalar import RULE as NON_SCALAR

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Observed

_INPLACE = re.compile(
    r"modified by an inplace operation: \[(?P<type>[\w.]+) \[(?P<shape>[\d, ]*)\]\], which is output (?P<index>\d+) of (?P<op>\w+), is at version (?P<now>\d+); expected version (?P<then>\d+)"
)


def saved_tensor_modified(crash: Crash, session: Observed | None) -> Explanation | None:
    match = _INPLACE.search(crash.message)
    if match is None:
        return None
    op = _op_name(match["op"])
    shape = match["shape"].replace(" ", "")
    changes = int(match["now"]) - int(match["then"])
    return Explanation(
        INPLACE,
        {"op": op, "shape": f"[{shape}]" if shape else "scalar", "changes": changes, "times": "time" if changes == 1 else "times"},
        evidence={"forward_op": match["op"]},
    )


def leaf_modified(crash: Crash, session: Observed | None) -> Explanation | None:
    if "a leaf Variable that requires grad is being used in an in-place operation" not in crash.message:
        return None
    return Explanation(LEAF, {})




def freed_graph(crash: Crash, session: Observed | None) -> Explanation | None:
    if "Trying to backward through the graph a second time" not in crash.message:
        return None
    variant, fields = _freed_graph_cause(session) if session is not None else ("twice", {})
    return Explanation(FREED, fields, variant=variant)


def _freed_graph_cause(session: Observed) -> tuple[str, dict[str, str]]:
    """Tell the causes apart by the parameters behind the part of this graph that the previous
    backward() already went through ("old": its nodes are older than that backward's root) and
    behind the rest ("new"). The same parameters on both sides: an earlier iteration's state
    was carried into this one. Disjoint, with an optimizer step in between: one model's output
    fed another model's loss without `.detach()` (a GAN's fake batch)."""
    current = session.backward.current
    roots = [t.grad_fn for t in (current.tensors if current else ()) if getattr(t, "grad_fn", None) is not None]
    stepped = session.steps > session.steps_at_last_backward
    if not roots or session.last_backward_root_seq < 0:
        return ("carried", {}) if stepped and session.backward.completed else ("twice", {})
    old, new = _parameters_by_age(roots, session.last_backward_root_seq)
    if old & new:
        return ("carried", {})
    if old and new and stepped:
        models = sorted({type(m).__name__ for m in session.model_roots() if any(id(p) in old for p in m.parameters())})
        return "fed-to-another-model", {"producer": f"`{models[0]}`" if len(models) == 1 else "another model"}
    return ("twice", {}) if old else (("carried", {}) if stepped else ("twice", {}))


def _parameters_by_age(roots: list[Any], before: int, max_nodes: int = 200_000) -> tuple[set[int], set[int]]:
    """ids of the leaves reached through nodes created no later than `before` ("old"), and of
    those reached through newer nodes only ("new")."""
    old: set[int] = set()
    new: set[int] = set()
    seen: set[tuple[int, bool]] = set()
    stack = [(root, False) for root in roots]
    while stack and len(seen) < max_nodes:
        node, aged = stack.pop()
        number = node._sequence_nr()
        aged = aged or number <= before
        if (id(node), aged) in seen:
            continue
        seen.add((id(node), aged))
        variable = getattr(node, "variable", None)
        if variable is not None:
            (old if aged else new).add(id(variable))
            continue
        stack.extend((child, aged) for child, _ in node.next_functions if child is not None)
    return old, new


def backward_without_graph(crash: Crash, session: Observed | None) -> Explanation | None:
    if "does not require grad and does not have a grad_fn" not in crash.message:
        return None
    frame = crash.user_frame()
    block = grad_off_block(frame.file, frame.line) if frame is not None else None
    if frame is not None and block is not None:  # backward() itself sits in the block: that line is the one to change
        return Explanation(NO_GRAPH, {"block_line": block}, variant="backward-under-grad-off", at=(frame.file, block))
    variant, fields, at = _why_no_graph(crash, session)
    return Explanation(NO_GRAPH, fields, variant=variant, at=at)


def numpy_of_grad_tensor(crash: Crash, session: Observed | None) -> Explanation | None:
    if "Can't call numpy() on Tensor that requires grad" not in crash.message:
        return None
    frame = crash.user_frame()
    torch = torch_module()
    name = "the tensor"
    if frame is not None and torch is not None:
        for key, value in frame.locals.items():
            if isinstance(value, torch.Tensor) and value.requires_grad:
                name = f"`{key}`"
                break
    return Explanation(NUMPY, {"tensor": name})


#: why the tensor given to backward() has no graph: the rule's variant, its fields, and the line to point at
Cause = tuple[str, dict[str, Any], Location | None]


def _why_no_graph(crash: Crash, session: Observed | None) -> Cause:
    named = _named_cause(crash)
    if named is not None:
        return named
    torch = torch_module()
    loss = _loss(crash, session)
    if loss is not None and torch is not None and loss.is_inference():
        return "inference-mode", {}, None
    if session is not None:
        roots = session.model_roots()
        params = [p for root in roots for p in root.parameters()]
        if params and not any(p.requires_grad for p in params):
            return "all-frozen", {}, None
        uses = [session.modules.ran.get(root) for root in roots]
        if uses and all(use is not None and use.grad_calls == 0 and use.no_grad_calls > 0 for use in uses):
            return "forward-without-grad", {}, _grad_off_call_site(session, roots)
    return "cut-on-the-way", {}, None


#: attributes and methods whose result has no graph: `x.item()`, `x.detach()`, `x.data`
_CUTS = frozenset({"item", "numpy", "tolist", "detach", "data"})
#: functions that make a new tensor, without a graph, from a value
_REBUILDS = frozenset({"tensor", "as_tensor", "from_numpy"})


def _named_cause(crash: Crash) -> Cause | None:
    """Why the tensor backward() was called on has no graph, in the source of the function that
    calls it: its assignment (or that of a name its assignment reads) sits under a block that
    turns autograd off, or its assignment cuts the graph (`.item()`, `torch.tensor(...)`)."""
    frame = crash.user_frame()
    tree = module_tree(frame.file) if frame is not None else None
    if frame is None or tree is None:
        return None
    functions = functions_around(tree, frame.line)
    nodes = list(own_nodes(functions[-1] if functions else tree))
    name = next((n for node in nodes if isinstance(node, ast.Call) and node.lineno == frame.line
                 and (n := _backward_receiver(node)) is not None), None)
    assigned = _assignment(nodes, name, frame.line) if name is not None else None
    if name is None or assigned is None:
        return None
    span = grad_off_span(frame.file, assigned.lineno)
    if span is not None:
        return _under_grad_off(name, span, frame.file)
    value = assigned.value
    for source in dict.fromkeys(n.id for n in ast.walk(value) if isinstance(n, ast.Name)) if value is not None else ():
        made = _assignment(nodes, source, assigned.lineno - 1)
        span = grad_off_span(frame.file, made.lineno) if made is not None else None
        if span is not None:
            return _under_grad_off(name, span, frame.file, source)
    cut = next((c for n in ast.walk(value) if (c := _cut(n)) is not None), None) if value is not None else None
    if cut is None:
        return None
    return "cut", {"name": name, "line": assigned.lineno, "cut": cut}, (frame.file, assigned.lineno)


def _backward_receiver(call: ast.Call) -> str | None:
    """`loss` in `loss.backward()` and in `scaler.scale(loss).backward()`."""
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr != "backward":
        return None
    target = func.value
    if isinstance(target, ast.Call) and isinstance(target.func, ast.Attribute) and target.func.attr == "scale" and target.args:
        target = target.args[0]
    return target.id if isinstance(target, ast.Name) else None


def _assignment(nodes: list[ast.AST], name: str, before: int) -> ast.Assign | ast.AnnAssign | ast.AugAssign | None:
    """The assignment of `name` at or before line `before`, when the function has only one (with
    several, the source cannot say which one ran)."""
    found = [node for node in nodes if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign))
             and any(isinstance(t, ast.Name) and t.id == name
                     for target in (node.targets if isinstance(node, ast.Assign) else [node.target]) for t in ast.walk(target))]
    return found[0] if len(found) == 1 and found[0].lineno <= before else None


def _under_grad_off(name: str, span: tuple[int, int, str], file: str, source: str | None = None) -> Cause:
    first, last, manager = span
    lines = f"lines {first}-{last}" if last > first else f"line {first}"
    if manager.startswith("@"):
        return "decorated", {"name": source or name, "manager": manager, "line": first,
                             "bare_manager": manager.lstrip("@")}, (file, first)
    if source is not None:
        return "from-grad-off", {"name": name, "source": source, "manager": manager, "lines": lines}, (file, first)
    return "under-grad-off", {"name": name, "manager": manager, "lines": lines}, (file, first)


def _cut(node: ast.AST) -> str | None:
    """How `node` leaves the graph, as the message shows it (`.item()`, `torch.tensor(...)`), or None."""
    if isinstance(node, ast.Attribute) and node.attr == "data":
        return ".data"
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
        return None
    func = node.func
    if func.attr in _CUTS:
        return f".{func.attr}()"
    if func.attr in _REBUILDS and isinstance(func.value, ast.Name) and func.value.id in ("torch", "np", "numpy"):
        return f"{func.value.id}.{func.attr}(...)"
    return None


def _grad_off_call_site(session: Observed, roots: list[Any]) -> Location | None:
    """The `with torch.no_grad():` line around the place a model was called, when the source has one."""
    for root in roots:
        site = session.modules.roots.get(root)
        block = grad_off_block(*site) if site is not None else None
        if site is not None and block is not None:
            return (site[0], block)
    return None


def _loss(crash: Crash, session: Observed | None) -> Any:
    if session is not None and session.backward.current is not None and session.backward.current.tensors:
        return session.backward.current.tensors[0]
    torch = torch_module()
    if torch is None:
        return None
    names = user_names(crash)
    frame = crash.user_frame()
    for key, value in (frame.locals.items() if frame else ()):
        if isinstance(value, torch.Tensor) and value.grad_fn is None and not value.requires_grad and id(value) in names:
            if "loss" in key:
                return value
    return None


def _op_name(node: str) -> str:
    """`SigmoidBackward0` or `Sigmoid` -> `sigmoid`; `AddmmBackward0` -> `addmm` (a Linear)."""
    name = re.sub(r"Backward\d*$", "", node)
    special = {"Addmm": "addmm (a Linear layer)", "Mm": "a matrix multiplication", "T": "transpose", "Relu": "relu", "CudnnConvolution": "a convolution", "ConvolutionBackward": "a convolution"}
    return special.get(name, name.lower())


#: where these explainers are tried: lower first (core/plugins.py)
ORDER = 50
_GRAD_READ = re.compile(r"(?P<name>[A-Za-z_][\w.]*)\.grad\b")


def gradient_is_none(crash: Crash, session: Observed | None) -> Explanation | None:
    """`p.data.add_(-lr * p.grad)` with no gradient: a TypeError or AttributeError about None at
    a line that reads the `.grad` of a tensor whose `.grad` is None."""
    if crash.exc_type not in ("TypeError", "AttributeError") or "NoneType" not in crash.message:
        return None
    frame = crash.user_frame()
    torch = torch_module()
    if frame is None or frame.live is None or torch is None:
        return None
    for match in _GRAD_READ.finditer(linecache.getline(frame.file, frame.line)):
        tensor = _resolve(match["name"], frame.live.f_locals, frame.live.f_globals)
        if isinstance(tensor, torch.Tensor) and tensor.grad is None:
            if tensor.grad_fn is not None and "." not in match["name"]:
                return _not_a_leaf(match["name"], frame)
            why = "" if tensor.requires_grad else " (it does not require grad)"
            return Explanation(GRAD_NONE, {"tensor": match["name"], "why": why})
    return None


def _not_a_leaf(name: str, frame: Frame) -> Explanation | None:
    """`.grad` of the result of an op: the name was rebound by a hand-written update that reads
    it (`w = w - lr * w.grad`), or made by an op on a leaf (`torch.randn(3, requires_grad=True) * 0.01`)."""
    made = binding_of(frame, name, frame.line)
    if not isinstance(made, ast.expr):
        return None
    variant = "rebound" if any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(made)) else "not-a-leaf"
    return Explanation(GRAD_NONE, {"tensor": name, "made": ast.unparse(made), "line": made.lineno}, variant=variant)


def _resolve(dotted: str, *namespaces: dict[str, Any]) -> Any:
    """The object a dotted name reads in a frame (`self.fc.weight`), or None."""
    head, *rest = dotted.split(".")
    value = next((space[head] for space in namespaces if head in space), None)
    for part in rest:
        value = getattr(value, part, None)
    return value


def backward_of_non_scalar(crash: Crash, session: Observed | None) -> Explanation | None:
    """`loss.backward()` on a tensor of several values: its name and shape, and the loss built
    with reduction='none' that made it, when the user's frame holds one."""
    if "grad can be implicitly created only for scalar outputs" not in crash.message:
        return None
    torch = torch_module()
    frame = crash.user_frame()
    if torch is None or frame is None or frame.live is None:
        return None
    if not any(f.function == "backward" and f is not frame for f in crash.deepest()):
        return None  # torch.autograd.grad(outputs, inputs): its grad_outputs, another fix
    out = next((f.locals["out"] for f in crash.deepest() if f.function == "_make_grads" and isinstance(f.locals.get("out"), torch.Tensor)), None)
    if out is None or out.numel() == 1:
        return None
    tree = module_tree(frame.file)
    receivers = [node.func.value for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                 and node.func.attr == "backward" and node.lineno <= frame.line <= (node.end_lineno or node.lineno)] if tree is not None else []
    if len(receivers) != 1:
        return None
    node = type(out.grad_fn).__name__ if out.grad_fn is not None else ""
    named = user_names(crash).get(id(out)) or (ast.unparse(receivers[0]) if isinstance(receivers[0], (ast.Name, ast.Attribute)) else None)
    fields = {"shape": list(out.shape), "count": out.numel()}
    if named is None:  # `criterion(out, y).backward()`
        return Explanation(NON_SCALAR, fields, variant="unnamed", evidence={"grad_fn": node} if node else None)
    fields["name"] = named
    losses = [name for name, value in {**frame.live.f_globals, **frame.locals}.items()
              if isinstance(value, torch.nn.modules.loss._Loss) and getattr(value, "reduction", None) == "none"]
    if len(losses) == 1 and ("Loss" in node or "CrossEntropy" in node or node == "AbsBackward0"):  # a loss's own backward node (L1: abs)
        return Explanation(NON_SCALAR, fields | {"loss": losses[0]}, variant="reduction-none", evidence={"grad_fn": node})
    return Explanation(NON_SCALAR, fields, evidence={"grad_fn": node} if node else None)


EXPLAINERS = (saved_tensor_modified, leaf_modified, freed_graph, backward_without_graph, numpy_of_grad_tensor, gradient_is_none,
              backward_of_non_scalar)
