"""The user's source, read back at run time: the syntax tree of a file, and the block around a line."""

from __future__ import annotations

import ast
import functools
import linecache
from collections.abc import Iterator
from types import CodeType
from typing import Any

from torchdoctor.core.locate import is_user_file

#: context managers and decorators that turn autograd off
_GRAD_OFF = frozenset({"no_grad", "inference_mode"})


@functools.lru_cache(maxsize=256)
def module_tree(filename: str) -> ast.Module | None:
    """The parsed file (None when it cannot be read or parsed)."""
    source = "".join(linecache.getlines(filename))
    try:
        return ast.parse(source) if source else None
    except (SyntaxError, ValueError):
        return None


def scope_of(tree: ast.Module, code: CodeType) -> ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The function (or the module) of `tree` that `code` was compiled from."""
    if code.co_name == "<module>":
        return tree
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == code.co_name:
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            if first == code.co_firstlineno:
                return node
    return None


#: nodes that open a scope of their own: their names are not the enclosing function's
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def own_nodes(scope: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a function or module, not those of the functions, classes and
    comprehensions inside it (in no particular order)."""
    stack = list(ast.iter_child_nodes(scope))
    while stack:
        node = stack.pop()
        if isinstance(node, _SCOPES):
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


def child_built_at(owner: Any, child: Any) -> tuple[str, int] | None:
    """The line of `self.<name> = ...` in the `__init__` (of the user's classes) of the module
    `owner` that holds `child` as its submodule `<name>`: where the layer was built (a call;
    `self.rnn = rnn` only stores a layer built elsewhere)."""
    names = [name for name, module in getattr(owner, "_modules", {}).items() if module is child]
    for cls in type(owner).__mro__ if names else ():
        code = getattr(cls.__dict__.get("__init__"), "__code__", None)
        tree = module_tree(code.co_filename) if code is not None and is_user_file(code.co_filename) else None
        scope = scope_of(tree, code) if tree is not None and code is not None else None
        for node in own_nodes(scope) if scope is not None else ():
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and any(
                    isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self" and t.attr in names
                    for t in node.targets):
                return code.co_filename, node.lineno  # type: ignore[union-attr]
    return None


def grad_off_block(filename: str, line: int) -> int | None:
    """The line of the innermost `with torch.no_grad():` (`inference_mode()`,
    `set_grad_enabled(False)`) block around `line`, or of the `@torch.no_grad()` decorator of
    the function around it; None when autograd is not turned off there in the source."""
    tree = module_tree(filename)
    if tree is None:
        return None
    found: int | None = None
    for node in ast.walk(tree):
        end = getattr(node, "end_lineno", None)
        if end is None or not node.lineno <= line <= end:  # type: ignore[attr-defined]
            continue
        if isinstance(node, (ast.With, ast.AsyncWith)) and any(_turns_grad_off(item.context_expr) for item in node.items):
            if found is None or node.lineno > found:
                found = node.lineno
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for decorator in node.decorator_list:
                if _turns_grad_off(decorator) and (found is None or decorator.lineno > found):
                    found = decorator.lineno
    return found


def _turns_grad_off(expr: ast.expr) -> bool:
    call = expr if isinstance(expr, ast.Call) else None
    target = call.func if call is not None else expr
    name = target.attr if isinstance(target, ast.Attribute) else target.id if isinstance(target, ast.Name) else ""
    if name in _GRAD_OFF:
        return True
    if name == "set_grad_enabled" and call is not None and call.args:
        first = call.args[0]
        return isinstance(first, ast.Constant) and first.value is False
    return False
