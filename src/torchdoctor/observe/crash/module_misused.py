"""One of the user's modules misused on the user's line.

"'ConvLoRA' object has no attribute 'lora_B'" is explained from the module's own class: the
attribute is created only under a condition of `__init__` (false for this object), or only by
another method (not run yet), or a name close to it exists. The module is the one value of an
attribute chain on the line (`self`, `model.encoder`) of the type the message names that lacks
the attribute (read without running the user's code).

"'L1LossMasked' object is not subscriptable": one module indexed as if it were a list of them
(the one module indexed on the line of the type the message names)."""

from __future__ import annotations

import ast
import difflib
import inspect
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from torchdoctor.core.locate import display_path, is_user_file
from torchdoctor.introspect.source import module_tree
from torchdoctor.observe.crash.describe import MISSING, NO_ATTRIBUTE, asked_of, line_nodes, resolve, torch_module
from torchdoctor.observe.crash.explain import Explanation
from torchdoctor.observe.crash.model import Crash
from torchdoctor.rules.api.module_attribute_missing import RULE
from torchdoctor.rules.api.module_not_subscriptable import RULE as NOT_SUBSCRIPTABLE

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Holdings

_NOT_SUBSCRIPTABLE = re.compile(r"^'(?P<type>\w+)' object is not subscriptable")
_REGISTERS = frozenset({"register_parameter", "register_buffer", "register_module", "add_module"})


@dataclass(frozen=True)
class Setter:
    """Where the class binds the attribute: a method, its line, the `if` around it (if any)."""

    method: str
    file: str
    line: int
    condition: str | None


def module_attribute_missing(crash: Crash, session: Holdings | None) -> Explanation | None:
    match = NO_ATTRIBUTE.match(crash.message) if crash.exc_type == "AttributeError" else None
    torch = torch_module()
    frame = crash.user_frame()
    if match is None or torch is None or frame is None or frame.live is None:
        return None
    kind, attribute = match["type"], match["attribute"]
    owners = {id(value): (text, value) for text, (_, value) in asked_of(
        frame, attribute, lambda v: isinstance(v, torch.nn.Module) and type(v).__name__ == kind and not _holds(v, attribute)).items()}
    if len(owners) != 1:
        return None
    text, owner = next(iter(owners.values()))
    fields = {"owner": text, "type": kind, "attribute": attribute}
    setters = _setters(type(owner), attribute)
    in_init = [s for s in setters if s.method == "__init__"]
    conditions = {s.condition for s in in_init}
    conditional = [s for s in in_init if s.condition and f"not ({s.condition})" not in conditions]
    if conditional and len(conditional) == len(in_init):
        setter = conditional[0]
        return Explanation(RULE, fields | {"condition": setter.condition, "where": _where(setter)})
    if setters and not any(s.method == "__init__" for s in setters):
        setter = setters[0]
        return Explanation(RULE, fields | {"method": setter.method, "where": _where(setter)}, variant="other-method")
    if not setters:
        similar = difflib.get_close_matches(attribute, _names(owner), n=1, cutoff=0.75)
        if similar:
            return Explanation(RULE, fields | {"similar": similar[0]}, variant="similar")
    return None


def module_not_subscriptable(crash: Crash, session: Holdings | None) -> Explanation | None:
    match = _NOT_SUBSCRIPTABLE.match(crash.message) if crash.exc_type == "TypeError" else None
    torch = torch_module()
    frame = crash.user_frame()
    if match is None or torch is None or frame is None or frame.live is None:
        return None
    indexed: dict[int, ast.Subscript] = {}
    for node in line_nodes(frame):
        if isinstance(node, ast.Subscript):
            owner = resolve(node.value, frame)
            if owner is not MISSING and isinstance(owner, torch.nn.Module) and type(owner).__name__ == match["type"]:
                indexed[id(owner)] = node
    if len(indexed) != 1:
        return None
    node = next(iter(indexed.values()))
    return Explanation(NOT_SUBSCRIPTABLE, {"owner": ast.unparse(node.value), "type": match["type"], "indexed": ast.unparse(node)})


def _holds(module: Any, attribute: str) -> bool:
    """Has the module the attribute, as a plain attribute, a child, a parameter or a buffer?"""
    if attribute in getattr(module, "__dict__", {}):
        return True
    if any(attribute in (vars(module).get(registry) or {}) for registry in ("_modules", "_parameters", "_buffers")):
        return True
    try:
        inspect.getattr_static(module, attribute)
    except AttributeError:
        return False
    return True


def _names(module: Any) -> list[str]:
    names = [name for name in vars(module) if not name.startswith("_")]
    for registry in ("_modules", "_parameters", "_buffers"):
        names += list(vars(module).get(registry) or {})
    return names


def _where(setter: Setter) -> str:
    return f"{display_path(setter.file)}:{setter.line}"


def _setters(cls: type, attribute: str) -> list[Setter]:
    """The bindings of `self.<attribute>` in the methods of the user's classes the module is made of."""
    found: list[Setter] = []
    for klass in cls.__mro__:
        try:
            file = inspect.getsourcefile(klass)
        except TypeError:
            continue
        if file is None or not is_user_file(file):
            continue
        tree = module_tree(file)
        classes = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == klass.__name__] if tree else []
        if len(classes) != 1:
            continue
        for method in classes[0].body:
            if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found += [Setter(method.name, file, line, condition) for line, condition in _bound_in(method, attribute)]
    return found


def _bound_in(method: ast.FunctionDef | ast.AsyncFunctionDef, attribute: str) -> list[tuple[int, str | None]]:
    """(line, the test of the innermost `if` around it) of each binding of `self.<attribute>`."""
    found: list[tuple[int, str | None]] = []

    def visit(statements: list[ast.stmt], condition: str | None) -> None:
        for statement in statements:
            if _binds(statement, attribute):
                found.append((statement.lineno, condition))
            if isinstance(statement, ast.If):
                visit(statement.body, ast.unparse(statement.test))
                visit(statement.orelse, f"not ({ast.unparse(statement.test)})")
            elif isinstance(statement, (ast.For, ast.AsyncFor, ast.While)):
                visit(statement.body, condition)
                visit(statement.orelse, condition)
            elif isinstance(statement, (ast.With, ast.AsyncWith)):
                visit(statement.body, condition)
            elif isinstance(statement, ast.Try):
                for block in (statement.body, *(h.body for h in statement.handlers), statement.orelse, statement.finalbody):
                    visit(block, condition)

    visit(method.body, None)
    return found


def _binds(statement: ast.stmt, attribute: str) -> bool:
    targets: list[ast.expr] = []
    if isinstance(statement, ast.Assign):
        targets = list(statement.targets)
    elif isinstance(statement, (ast.AnnAssign, ast.AugAssign)):
        targets = [statement.target]
    for target in targets:
        for node in ast.walk(target):
            if (isinstance(node, ast.Attribute) and node.attr == attribute and isinstance(node.value, ast.Name)
                    and node.value.id == "self"):
                return True
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        call = statement.value
        name = call.func.attr if isinstance(call.func, ast.Attribute) else call.func.id if isinstance(call.func, ast.Name) else ""
        given = call.args[1] if name == "setattr" and len(call.args) > 1 else call.args[0] if name in _REGISTERS and call.args else None
        return isinstance(given, ast.Constant) and given.value == attribute
    return False


ORDER = 69
EXPLAINERS = (module_attribute_missing, module_not_subscriptable)
