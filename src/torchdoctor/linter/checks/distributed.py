"""TD165: a collective that only some ranks reach (inside `if rank == 0:` and the like).

A condition on a value that a collective has made the same on every rank (`all_reduce(flags)`
then `if flags[0].item() > 0:`) is not a rank condition, whatever the value is called.
"""

from __future__ import annotations

import ast

from torchdoctor.linter.api import FILE_END, Context, lint_check, literal
from torchdoctor.linter.names import dotted
from torchdoctor.rules.distributed.collective_under_rank_condition import RULE as COLLECTIVE_UNDER_RANK_CONDITION

COLLECTIVES = frozenset({
    "barrier", "monitored_barrier", "all_reduce", "all_gather", "all_gather_into_tensor", "all_gather_object",
    "broadcast", "broadcast_object_list", "reduce", "reduce_scatter", "reduce_scatter_tensor", "all_to_all",
    "all_to_all_single", "gather", "gather_object", "scatter", "scatter_object_list",
})
_RANK_WORDS = ("rank",)
_MAIN_WORDS = ("main_process", "master", "rank_zero", "global_zero", "is_primary", "rank0", "is_main")


def rank_test(test: ast.expr, ctx: Context) -> bool:
    """`rank == 0`, `dist.get_rank() != 0`, `local_rank in [-1, 0]`, `is_main_process()`, and
    `and`-combinations of them: a condition that is true on some ranks only."""
    if isinstance(test, ast.BoolOp):
        return isinstance(test.op, ast.And) and any(rank_test(v, ctx) for v in test.values)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return rank_test(test.operand, ctx)
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        left, right = test.left, test.comparators[0]
        if isinstance(test.ops[0], (ast.Eq, ast.NotEq, ast.Gt, ast.LtE)):
            return (_is_rank(left, ctx) and _is_rank_number(right)) or (_is_rank(right, ctx) and _is_rank_number(left))
        if isinstance(test.ops[0], (ast.In, ast.NotIn)) and isinstance(right, (ast.List, ast.Tuple, ast.Set)):
            return (_is_rank(left, ctx) and all(_is_int(e) for e in right.elts)
                    and any(_is_rank_number(e) for e in right.elts))
        return False
    name = _name(test)
    return name is not None and any(word in name.lower() for word in _MAIN_WORDS)


def _is_rank(node: ast.expr, ctx: Context) -> bool:
    name = _name(node)
    if name is None or name in _synced(ctx):
        return False
    last = name.rpartition(".")[2].lower()
    if last.rpartition("_")[2] == "ranks":
        return False  # `num_ranks`, `overflow_ranks`: a count or a list of ranks, not this rank
    return any(word in last for word in _RANK_WORDS) and "world" not in last and "size" not in last


#: collectives after which the tensor (or list) passed first holds the same value on every rank
_SYNCING = frozenset({"all_reduce", "all_gather", "all_gather_into_tensor", "all_gather_object", "broadcast",
                      "broadcast_object_list"})


def _synced(ctx: Context) -> set[str]:
    """Names in the current function whose value a collective made equal on every rank."""
    store: dict[int, set[str]] = ctx.memo.setdefault("TD165-synced", {})
    return store.get(id(ctx.scope), set())


@lint_check(COLLECTIVE_UNDER_RANK_CONDITION, ast.Call, names=_SYNCING)
def synced_by_collective(node: ast.Call, ctx: Context) -> None:
    name = ctx.qualified(node.func) or ""
    if name.rpartition(".")[0] != "torch.distributed" or not node.args:
        return
    target = dotted(node.args[0])
    if target is not None:
        ctx.memo.setdefault("TD165-synced", {}).setdefault(id(ctx.scope), set()).add(target)


@lint_check(COLLECTIVE_UNDER_RANK_CONDITION, ast.Assign)
def computed_from_synced(node: ast.Assign, ctx: Context) -> None:
    """`a, b = flags[0].item(), flags[1].item()` after `all_reduce(flags)`: a and b agree on every rank."""
    synced = _synced(ctx)
    if not synced or not any(dotted(n) in synced for n in ast.walk(node.value)
                             if isinstance(n, (ast.Name, ast.Attribute))):
        return
    for target in node.targets:
        for item in ast.walk(target):
            if isinstance(item, (ast.Name, ast.Attribute)) and dotted(item) is not None:
                synced.add(dotted(item))  # type: ignore[arg-type]


def _name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Call):
        node = node.func
    return dotted(node)


def _is_int(node: ast.expr) -> bool:
    return isinstance(literal(node), int)


def _is_rank_number(node: ast.expr) -> bool:
    """A rank (0, 1, ...). `rank != -1` is "distributed is on", true on every rank or on none:
    -1 is the usual "not launched by torchrun" value of `local_rank`."""
    value = literal(node)
    return isinstance(value, int) and value >= 0


def _collectives(body: list[ast.stmt], ctx: Context) -> list[tuple[ast.Call, str]]:
    found = []
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(node, ast.Call):
            name = ctx.qualified(node.func) or ""
            head, _, last = name.rpartition(".")
            if head == "torch.distributed" and last in COLLECTIVES:
                found.append((node, last))
        stack.extend(ast.iter_child_nodes(node))
    return found


@lint_check(COLLECTIVE_UNDER_RANK_CONDITION, ast.If)
def collective_under_rank_condition(node: ast.If, ctx: Context) -> None:
    if not rank_test(node.test, ctx):
        return
    body, orelse = _collectives(node.body, ctx), _collectives(node.orelse, ctx)
    if body and orelse:
        return  # every rank reaches a collective
    for call, name in body or orelse:
        ctx.memo.setdefault(COLLECTIVE_UNDER_RANK_CONDITION.code, []).append((ctx.scope, node, call, name))


@lint_check(COLLECTIVE_UNDER_RANK_CONDITION, FILE_END)
def report_collectives(tree: ast.Module, ctx: Context) -> None:
    found = ctx.memo.get(COLLECTIVE_UNDER_RANK_CONDITION.code, [])
    for scope, condition, call, name in found:
        # a handshake: `if rank != 0: barrier()` ... `if rank == 0: barrier()` in one function
        partners = {id(c) for s, c, _, n in found if s is scope and n == name}
        if len(partners) > 1:
            continue
        ctx.report(COLLECTIVE_UNDER_RANK_CONDITION, call,
                   fields={"collective": name, "condition": ctx.text(condition.test)})
