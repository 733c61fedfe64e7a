"""A one-shot iterator used twice (TD180): `params = model.parameters()` handed to an optimizer
and then looped over, or consumed by `clip_grad_norm_` in every iteration of a loop.

A name counts when its function (or the module) binds it once, to a generator of a module
(`parameters()`, `named_parameters()`, `modules()`, ...), an `itertools.chain`, a generator
expression, `map` or `filter`, and every use of it consumes it: the iterable of a `for` or of a
comprehension, or an argument of a call. Any other use (returned, stored, tested) may hand it
on, and the name is left alone. Uses in the two branches of one `if` (or a `try` and its
handler) are one use; a use inside a loop that does not also make the iterator is two.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchdoctor.core.finding import Fix
from torchdoctor.linter.api import FILE_END, Context, lint_check
from torchdoctor.linter.index import tree_index
from torchdoctor.rules.api.iterator_reused import RULE as ITERATOR_REUSED

#: methods of nn.Module that return generators
_MODULE_GENERATORS = frozenset({"parameters", "named_parameters", "buffers", "named_buffers", "children",
                                "named_children", "modules", "named_modules"})
_BUILTIN_ITERATORS = frozenset({"map", "filter"})
_SCOPES = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)


@lint_check(ITERATOR_REUSED, ast.Assign)
def remember_one_shot_binding(node: ast.Assign, ctx: Context) -> None:
    """The cheap pre-test: a file that binds no name to a one-shot iterator is not walked again."""
    if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) and _one_shot(node.value, frozenset(), ctx):
        ctx.memo.setdefault(ITERATOR_REUSED.code, []).append(node)


@lint_check(ITERATOR_REUSED, FILE_END)
def report_reused_iterators(tree: ast.Module, ctx: Context) -> None:
    made: list[ast.Assign] = ctx.memo.get(ITERATOR_REUSED.code, [])
    if not made:
        return
    index = tree_index(tree, ctx)
    overridden = frozenset(n.name for n in index.of_any(ast.FunctionDef, ast.AsyncFunctionDef))  # type: ignore[attr-defined]
    for assign in made:
        scope = _scope_of(assign, index.parents)
        name = assign.targets[0].id  # type: ignore[attr-defined]
        if _one_shot(assign.value, overridden, ctx) and _bound_once(scope, name):
            _check_uses(scope, assign, name, index.parents, ctx)


def _scope_of(node: ast.AST, parents: dict[int, ast.AST]) -> ast.AST:
    current = parents.get(id(node))
    while current is not None and not isinstance(current, _SCOPES):
        current = parents.get(id(current))
    return current if current is not None else node


def _own_nodes(scope: ast.AST) -> Iterator[ast.AST]:
    """The nodes of `scope` outside its nested functions, classes and lambdas."""
    pending = list(ast.iter_child_nodes(scope))
    while pending:
        node = pending.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            pending.extend(ast.iter_child_nodes(node))


def _bound_names(node: ast.AST) -> Iterator[str]:
    """The names a statement or expression binds in its scope."""
    if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
        yield node.id
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        yield node.name
    elif isinstance(node, (ast.Global, ast.Nonlocal)):
        yield from node.names
    elif isinstance(node, ast.alias):
        yield (node.asname or node.name).partition(".")[0]
    elif isinstance(node, ast.arg):
        yield node.arg


def _bindings(scope: ast.AST) -> list[str]:
    """The names `scope` binds, once per binding: its own statements and its parameters, not
    those of the functions nested in it."""
    own = list(_own_nodes(scope))
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        own += [a for a in ast.walk(scope.args) if isinstance(a, ast.arg)]
    return [bound for node in own for bound in _bound_names(node)]


def _bound_once(scope: ast.AST, name: str) -> bool:
    return _bindings(scope).count(name) == 1


def _one_shot(value: ast.expr, overridden: frozenset[str], ctx: Context) -> bool:
    if isinstance(value, ast.GeneratorExp):
        return True
    if not isinstance(value, ast.Call):
        return False
    func = value.func
    if isinstance(func, ast.Attribute) and func.attr in _MODULE_GENERATORS:
        return func.attr not in overridden and ctx.qualified(func) is None  # a module's method, not a library function
    name = ctx.qualified(func)
    if name in ("itertools.chain", "itertools.chain.from_iterable"):
        return True
    return isinstance(func, ast.Name) and func.id in _BUILTIN_ITERATORS and name is None and func.id not in overridden


def _check_uses(scope: ast.AST, assign: ast.Assign, name: str, parents: dict[int, ast.AST], ctx: Context) -> None:
    uses: list[tuple[ast.Name, int, list[tuple[int, str]]]] = []
    for node in _visible_names(scope, name):
        if node.lineno < assign.lineno and _enclosing_function(node, scope, parents) is None:
            continue  # read before it is made, in the same flow: another binding's value (a loop's earlier pass)
        if not _consumes(node, parents):
            return  # handed on somewhere else: not ours to judge
        times, branches = _context(node, scope, assign, parents)
        uses.append((node, times, branches))
    uses.sort(key=lambda use: (use[0].lineno, use[0].col_offset))
    for index, (node, times, branches) in enumerate(uses):
        earlier = [u for u in uses[:index] if not _exclusive(u[2], branches)]
        if earlier or times > 1:
            if earlier:
                first, here = f"the use at line {earlier[0][0].lineno}", f"the use at line {node.lineno}"
            else:
                first, here = f"the first pass of the loop at line {node.lineno}", "every later pass"
            source = ctx.text(assign.value)
            fix = Fix(title=f"Make it a list: `{name} = list({source})`", edits=(ctx.edit(assign.value, f"list({source})"),))
            ctx.report(ITERATOR_REUSED, assign, fields={"name": name, "source": source, "first": first, "here": here},
                       fix=fix, evidence={"uses": [use[0].lineno for use in uses]})
            return


def _visible_names(scope: ast.AST, name: str) -> Iterator[ast.Name]:
    """Loads of `name` in `scope` and in the nested functions that do not bind it themselves."""
    pending = list(ast.iter_child_nodes(scope))
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and name in _bindings(node):
            continue
        if isinstance(node, ast.ClassDef):
            continue
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load):
            yield node
        pending.extend(ast.iter_child_nodes(node))


def _consumes(node: ast.Name, parents: dict[int, ast.AST]) -> bool:
    parent = parents.get(id(node))
    if isinstance(parent, ast.Starred):
        parent = parents.get(id(parent))
        return isinstance(parent, (ast.Call, ast.List, ast.Tuple, ast.Set))
    if isinstance(parent, (ast.For, ast.AsyncFor, ast.comprehension)):
        return parent.iter is node
    if isinstance(parent, ast.Call):
        return node in parent.args
    if isinstance(parent, ast.keyword):
        return isinstance(parents.get(id(parent)), ast.Call)
    return isinstance(parent, ast.YieldFrom)


def _enclosing_function(node: ast.AST, scope: ast.AST, parents: dict[int, ast.AST]) -> ast.AST | None:
    current = parents.get(id(node))
    while current is not None and current is not scope:
        if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return current
        current = parents.get(id(current))
    return None


def _context(node: ast.AST, scope: ast.AST, assign: ast.Assign, parents: dict[int, ast.AST]) -> tuple[int, list[tuple[int, str]]]:
    """How many times the use may run for one binding (2: in a loop that does not also bind it),
    and the branches it sits in: (id of the `if`/`try`, which branch)."""
    times, branches = 1, []
    child, current = node, parents.get(id(node))
    nested = False
    while current is not None and current is not scope:
        if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            nested = True  # called who knows how often: counted once
        elif isinstance(current, _LOOPS) and not nested and child is not getattr(current, "iter", None):
            if not any(n is assign for n in ast.walk(current)):
                times = 2
        elif isinstance(current, (ast.If, ast.IfExp)):
            branches.append((id(current), "body" if _within(child, current.body) else "else"))
        elif isinstance(current, ast.Try):
            branches.append((id(current), "body" if _within(child, current.body) else "handler"))
        child, current = current, parents.get(id(current))
    return times, branches


def _within(node: ast.AST, body: list[ast.stmt] | ast.expr) -> bool:
    return any(node is item for item in body) if isinstance(body, list) else node is body


def _exclusive(a: list[tuple[int, str]], b: list[tuple[int, str]]) -> bool:
    """Two uses that no single run reaches both of: the two branches of one `if` or `try`."""
    mine = dict(a)
    return any(key in mine and mine[key] != branch for key, branch in b)
