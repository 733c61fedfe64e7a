"""The user's source, read back at run time: the syntax tree of a file, the block around a line,
and where a `model.eval()` / `model.train()` belongs (plain `ast`: lint places those findings
with the same functions)."""

from __future__ import annotations

import ast
import functools
import inspect
import linecache
import re
from collections.abc import Callable, Iterator
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


def assignment_line(cls: type, attribute: str) -> tuple[str, int] | None:
    """The line in `cls`'s methods that assigns `self.<attribute>` (the line to change).

    Read through the methods' code objects (file and first line), which works for classes of
    any module, including the script run as `__main__`.
    """
    pattern = re.compile(rf"\bself\.{re.escape(attribute)}\s*(?::[^=]+)?=(?!=)")
    for klass in cls.__mro__:
        for member in vars(klass).values():
            code = getattr(member, "__code__", None)
            if code is None:
                continue
            try:
                lines, start = inspect.getsourcelines(code)
            except (OSError, TypeError):
                continue
            for offset, text in enumerate(lines):
                if pattern.search(text):
                    return (code.co_filename, start + offset)
    return None


def grad_off_block(filename: str, line: int) -> int | None:
    """The line of the innermost `with torch.no_grad():` (`inference_mode()`,
    `set_grad_enabled(False)`) block around `line`, or of the `@torch.no_grad()` decorator of
    the function around it; None when autograd is not turned off there in the source."""
    span = grad_off_span(filename, line)
    return span[0] if span is not None else None


def grad_off_span(filename: str, line: int) -> tuple[int, int, str] | None:
    """The innermost block around `line` that turns autograd off: its first and last lines and
    what turns it off, as written (`torch.no_grad()`; `@torch.no_grad()` for a decorated
    function, whose lines are the block); None when there is none."""
    tree = module_tree(filename)
    if tree is None:
        return None
    found: tuple[int, int, str] | None = None
    for node in ast.walk(tree):
        end = getattr(node, "end_lineno", None)
        if end is None or not node.lineno <= line <= end:  # type: ignore[attr-defined]
            continue
        if isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                if _turns_grad_off(item.context_expr) and (found is None or node.lineno > found[0]):
                    found = (node.lineno, end, ast.unparse(item.context_expr))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for decorator in node.decorator_list:
                if _turns_grad_off(decorator) and (found is None or decorator.lineno > found[0]):
                    found = (decorator.lineno, end, "@" + ast.unparse(decorator))
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


# ---------------------------------------------------------------- where a mode switch belongs


def functions_around(tree: ast.Module, line: int) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """The functions of `tree` whose code spans `line`, outermost first."""
    found = [node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
             and node.lineno <= line <= (node.end_lineno or node.lineno)]
    return sorted(found, key=lambda node: node.lineno)


def first_statement(function: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.stmt:
    """The function's first statement after its docstring."""
    body = function.body
    first = body[0]
    docstring = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str)
    return body[1] if docstring and len(body) > 1 else first


def _trains(function: ast.AST) -> bool:
    """The function's own code calls `.backward()` or `.step()`."""
    return any(isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("backward", "step")
               for node in own_nodes(function))


def _calls(function: ast.AST, name: str) -> bool:
    """The function's own code calls `name(...)` or `<object>.name(...)`."""
    return any(isinstance(node, ast.Call) and (isinstance(node.func, ast.Name) and node.func.id == name
                                               or isinstance(node.func, ast.Attribute) and node.func.attr == name)
               for node in own_nodes(function))


def evaluation_site(tree: ast.Module, line: int) -> ast.stmt | None:
    """Where `model.eval()` belongs for an evaluation whose forward pass runs at `line`: the
    first statement of the function around it when that function trains nothing (an evaluation
    function), else the outermost block around the line that turns autograd off; None when
    neither is there."""
    functions = functions_around(tree, line)
    if functions and not _trains(functions[-1]):
        return first_statement(functions[-1])
    blocks = [node for node in own_nodes(functions[-1] if functions else tree)
              if isinstance(node, (ast.With, ast.AsyncWith)) and node.lineno <= line <= (node.end_lineno or node.lineno)
              and any(_turns_grad_off(item.context_expr) for item in node.items)]
    return min(blocks, key=lambda node: node.lineno) if blocks else None


def training_site(tree: ast.Module, step_line: int, eval_line: int) -> ast.stmt | None:
    """Where `model.train()` belongs when an `eval()` at `eval_line` is still in force at the
    optimizer step at `step_line`; None when unsure.

    - An evaluation function that the stepping code (or the script) calls undoes it before it
      ends, when it ends with a simple statement (`return out`): that statement. Otherwise the
      loop that runs both the step and that call switches back at the top of each pass.
    - A function that steps, called from elsewhere than where `eval()` is, switches back when
      it starts.
    - An `eval()` after the step in the same loop: the top of that loop's body.
    """
    stepping = functions_around(tree, step_line)
    evaluating = functions_around(tree, eval_line)
    step_scope: ast.AST = stepping[-1] if stepping else tree
    eval_scope: ast.AST = evaluating[-1] if evaluating else tree
    if eval_scope is step_scope:
        loop = _loop_around(step_scope, step_line, lambda node: node.lineno <= eval_line <= (node.end_lineno or node.lineno))
        return loop.body[0] if loop is not None and eval_line > step_line else None
    if isinstance(eval_scope, (ast.FunctionDef, ast.AsyncFunctionDef)) and not _trains(eval_scope):
        name = eval_scope.name
        if step_scope is tree or _calls(step_scope, name):
            last = eval_scope.body[-1]
            if not hasattr(last, "body"):
                return last
            loop = _loop_around(step_scope, step_line, lambda node: _calls(node, name))
            return loop.body[0] if loop is not None else None
    if not isinstance(step_scope, (ast.FunctionDef, ast.AsyncFunctionDef)) or _calls(eval_scope, step_scope.name):
        return None  # `model.eval()` and then `fit(model)`: the switch itself is the line to change
    return first_statement(step_scope)


def _loop_around(scope: ast.AST, line: int, holds: Callable[[ast.For | ast.AsyncFor | ast.While], bool]) -> ast.For | ast.AsyncFor | ast.While | None:
    """The innermost loop of the scope's own code that spans `line` and `holds`."""
    loops = [node for node in own_nodes(scope) if isinstance(node, (ast.For, ast.AsyncFor, ast.While))
             and node.lineno <= line <= (node.end_lineno or node.lineno) and holds(node)]
    return max(loops, key=lambda node: node.lineno) if loops else None


# ---------------------------------------------------------------- a forward pass after training


@functools.lru_cache(maxsize=256)
def after_training(calls: tuple[tuple[CodeType, int], ...]) -> bool:
    """Whether a forward pass reached through `calls` (the user's frames, innermost first: code
    and line) runs after an iteration's training, as a validation does: in the innermost of
    those frames that runs inside a loop that backpropagates, no backward() follows it in that
    loop's body; and where that loop backpropagates in its own body (one step per pass), it does
    not run under an `if` (a sample drawn every few steps is part of the training loop). A
    forward before the backward() of its pass (pseudo-labels, a target, an action) is not."""
    for code, line in calls:
        tree = module_tree(code.co_filename)
        scope = scope_of(tree, code) if tree is not None else None
        if tree is None or scope is None:
            return False
        loops = sorted((node for node in own_nodes(scope) if isinstance(node, (ast.For, ast.AsyncFor, ast.While))
                        and node.lineno <= line <= (node.end_lineno or node.lineno)), key=lambda node: -node.lineno)
        trainers = _backpropagating_functions(tree)
        for loop in loops:
            found = [(node.lineno, nested) for node, nested in _walk_loop(loop)
                     if isinstance(node, ast.Call) and _backpropagates(node, trainers)]
            if not found:
                continue
            if any(lineno >= line for lineno, _ in found):
                return False
            direct = any(not nested for _, nested in found)
            gated = any(isinstance(node, ast.If) and node.lineno <= line <= (node.end_lineno or node.lineno)
                        for node, _ in _walk_loop(loop))
            return not (direct and gated)
    return False


@functools.lru_cache(maxsize=64)
def _backpropagating_functions(tree: ast.Module) -> frozenset[str]:
    """The functions of the file whose own code calls `.backward()`."""
    return frozenset(node.name for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                     and any(isinstance(inner, ast.Call) and _backpropagates(inner, frozenset()) for inner in own_nodes(node)))


def _backpropagates(node: ast.Call, trainers: frozenset[str]) -> bool:
    """`<tensor>.backward(...)`, or a call of one of `trainers` (`train_epoch(...)`, `self.fit(...)`)."""
    func = node.func
    if isinstance(func, ast.Attribute):
        return func.attr == "backward" or (func.attr in trainers and isinstance(func.value, ast.Name) and func.value.id == "self")
    return isinstance(func, ast.Name) and func.id in trainers


def _walk_loop(loop: ast.For | ast.AsyncFor | ast.While) -> Iterator[tuple[ast.AST, bool]]:
    """The nodes of the loop's body (not of functions defined in it), each with whether a loop
    nested in this one holds it."""
    stack: list[tuple[ast.AST, bool]] = [(statement, False) for statement in loop.body]
    while stack:
        node, nested = stack.pop()
        if isinstance(node, _SCOPES):
            continue
        yield node, nested
        inner = nested or isinstance(node, (ast.For, ast.AsyncFor, ast.While))
        stack.extend((child, inner) for child in ast.iter_child_nodes(node))
