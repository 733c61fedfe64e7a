"""Crashes about what an optimizer is given: "optimizer got an empty parameter list", and why;
the `model.parameters` method or the model itself instead of its parameters.

The message never says why the list is empty. The optimizer's call on the user's line names
what it was given (`model.parameters()`, a name bound to it, a `requires_grad` filter over
it); the model it reads is then looked at as it is: its layers kept in a plain list or dict
(nothing registered), every parameter frozen behind a `requires_grad` filter, or trainable
parameters behind a one-shot iterator that an earlier line used up. Anything else stays the
plain crash.
"""

from __future__ import annotations

import ast
import linecache
import re
from typing import TYPE_CHECKING, Any

from torchdoctor.introspect.source import assignment_line, module_tree, own_nodes, scope_of
from torchdoctor.observe.crash.describe import MISSING, resolve, torch_module
from torchdoctor.observe.crash.explain import Explanation
from torchdoctor.observe.crash.model import Crash, Frame
from torchdoctor.observe.crash.provenance import binding_of, crashes_at
from torchdoctor.rules.api.iterator_reused import RULE as ITERATOR_REUSED
from torchdoctor.rules.api.method_not_called import RULE as METHOD_NOT_CALLED
from torchdoctor.rules.grad_flow.module_in_plain_container import RULE as PLAIN_CONTAINER
from torchdoctor.rules.grad_flow.no_trainable_parameters import RULE as NO_TRAINABLE

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Holdings

_EMPTY = "optimizer got an empty parameter list"
#: the Module methods whose result is a model's parameters
_PARAMETERS = frozenset({"parameters", "named_parameters"})
_CONTAINERS: dict[type, str] = {list: "list", tuple: "tuple", dict: "dict"}


def empty_parameter_list(crash: Crash, session: Holdings | None) -> Explanation | None:
    if crash.exc_type != "ValueError" or _EMPTY not in crash.message:
        return None
    torch = torch_module()
    found = _optimizer_given(crash, torch)
    if found is None:
        return None
    frame, optimizer, given = found
    name = given.id if isinstance(given, ast.Name) else None
    made, made_line = given, frame.line
    if name is not None:
        bound = binding_of(frame, name, frame.line)
        if not isinstance(bound, ast.expr):
            return None
        made, made_line = bound, bound.lineno
    receiver = _parameters_receiver(made)
    model = resolve(receiver, frame) if receiver is not None else MISSING
    if receiver is None or not isinstance(model, torch.nn.Module):
        return None
    label = ast.unparse(receiver)
    kind = type(optimizer).__name__
    source = _text(frame.file, made)
    params = list(model.parameters())
    if not params:
        return _unregistered(crash, frame, model, label, kind, source)
    if not any(p.requires_grad for p in params) and "requires_grad" in source:
        return Explanation(NO_TRAINABLE, {"count": len(params), "model": label, "optimizer": kind, "source": source},
                           variant="optimizer-all-frozen")
    value = frame.locals.get(name, MISSING) if name is not None else MISSING
    if name is not None and made_line != frame.line and _one_shot(value) and any(p.requires_grad for p in params):
        first = _first_use(frame, name, made_line, frame.line)
        return Explanation(ITERATOR_REUSED, {"name": name, "source": source, "first": f"line {first}" if first else "an earlier use",
                                             "optimizer": kind, "crashed": crashes_at(crash)},
                           at=(frame.file, made_line), variant="optimizer-empty")
    return None


_NOT_PARAMETERS = re.compile(r"'\w+' object is not iterable|optimizer can only optimize Tensors, but one of the params is torch\.nn\.")


def not_parameters(crash: Crash, session: Holdings | None) -> Explanation | None:
    """An optimizer given `model.parameters` (the method) or the model itself."""
    if crash.exc_type != "TypeError" or _NOT_PARAMETERS.search(crash.message) is None:
        return None
    torch = torch_module()
    found = _optimizer_given(crash, torch)
    if found is None:
        return None
    frame, optimizer, given = found
    fields = {"optimizer": type(optimizer).__name__}
    if isinstance(given, ast.Attribute) and given.attr in _PARAMETERS and isinstance(resolve(given.value, frame), torch.nn.Module):
        return Explanation(METHOD_NOT_CALLED, fields | {"target": ast.unparse(given)}, variant="optimizer-method")
    if isinstance(resolve(given, frame), torch.nn.Module):
        return Explanation(METHOD_NOT_CALLED, fields | {"target": ast.unparse(given)}, variant="optimizer-module")
    return None


def _optimizer_given(crash: Crash, torch: Any) -> tuple[Frame, Any, ast.expr] | None:
    """(the user's frame, the optimizer being built, the expression its call on the user's line
    gave as parameters), when all three are known."""
    frame = crash.user_frame()
    if torch is None or frame is None or frame.live is None:
        return None
    optimizer = next((f.locals["self"] for f in crash.deepest() if isinstance(f.locals.get("self"), torch.optim.Optimizer)), None)
    call = _optimizer_call(frame, type(optimizer)) if optimizer is not None else None
    given = _params_argument(call) if call is not None else None
    return (frame, optimizer, given) if optimizer is not None and given is not None else None


def _unregistered(crash: Crash, frame: Frame, model: Any, label: str, kind: str, source: str) -> Explanation:
    """A model without parameters: its layers in a plain container (at the line storing them), or none at all."""
    torch = torch_module()
    for owner in model.modules():
        for attribute, value in vars(owner).items():
            container = _CONTAINERS.get(type(value))
            members = list(value.values()) if isinstance(value, dict) else list(value) if container else []
            held = [m for m in members if isinstance(m, (torch.nn.Module, torch.nn.Parameter)) and
                    (isinstance(m, torch.nn.Parameter) or any(True for _ in m.parameters()))]
            if attribute.startswith("_") or not held:
                continue
            kinds = sorted({type(m).__name__ for m in held})
            what = f"{len(held)} `{'`/`'.join(kinds)}` {'parameters' if kinds == ['Parameter'] else 'modules'}"
            at = assignment_line(type(owner), attribute)
            return Explanation(PLAIN_CONTAINER, {"what": what, "container": _CONTAINERS[type(value)], "attribute": attribute,
                                                 "model": label, "optimizer": kind, "crashed": crashes_at(crash) if at else ""},
                               at=at, variant="optimizer-empty")
    return Explanation(NO_TRAINABLE, {"model": label, "cls": type(model).__name__, "optimizer": kind, "source": source},
                       variant="optimizer-no-parameters")


def _optimizer_call(frame: Frame, optimizer: type) -> ast.Call | None:
    """The call on the frame's line that built the optimizer (`torch.optim.SGD(...)`, by the
    name of its class or of a class it derives from), when there is exactly one."""
    tree = module_tree(frame.file)
    scope = scope_of(tree, frame.live.f_code) if tree is not None and frame.live is not None else None
    if scope is None:
        return None
    names = {klass.__name__ for klass in optimizer.__mro__ if klass is not object}
    calls = [node for node in own_nodes(scope) if isinstance(node, ast.Call) and node.lineno <= frame.line <= (node.end_lineno or node.lineno)
             and _called_name(node.func) in names]
    return calls[0] if len(calls) == 1 else None


def _called_name(func: ast.expr) -> str | None:
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None


def _params_argument(call: ast.Call) -> ast.expr | None:
    if call.args and not isinstance(call.args[0], ast.Starred):
        return call.args[0]
    return next((keyword.value for keyword in call.keywords if keyword.arg == "params"), None)


def _parameters_receiver(expr: ast.expr) -> ast.expr | None:
    """`model` in `model.parameters()`, `filter(..., model.parameters())`, `[p for p in
    model.parameters() if ...]`: the one model whose parameters the expression reads."""
    found = [node.func.value for node in ast.walk(expr) if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
             and node.func.attr in _PARAMETERS and not node.args]
    if len(found) != 1 or not all(isinstance(n, (ast.Name, ast.Attribute)) for n in ast.walk(found[0]) if isinstance(n, ast.expr)):
        return None
    return found[0]


def _one_shot(value: Any) -> bool:
    """A one-shot iterator (a generator, `filter`, `itertools.chain`): iterating it returns itself."""
    if value is MISSING or isinstance(value, (list, tuple, dict, set)):
        return False
    try:
        return iter(value) is value
    except TypeError:
        return False


def _first_use(frame: Frame, name: str, after: int, before: int) -> int | None:
    """The first line after the binding that reads `name`, before the optimizer's line."""
    tree = module_tree(frame.file)
    scope = scope_of(tree, frame.live.f_code) if tree is not None and frame.live is not None else None
    if scope is None:
        return None
    lines = sorted(node.lineno for node in ast.walk(scope) if isinstance(node, ast.Name) and node.id == name
                   and isinstance(node.ctx, ast.Load) and after < node.lineno < before)
    return lines[0] if lines else None


def _text(filename: str, node: ast.expr) -> str:
    segment = ast.get_source_segment("".join(linecache.getlines(filename)), node)
    return " ".join((segment or ast.unparse(node)).split())


#: where these explainers are tried: lower first (core/plugins.py)
ORDER = 55
EXPLAINERS = (empty_parameter_list, not_parameters)
