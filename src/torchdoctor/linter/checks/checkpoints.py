"""`torch.load` in distributed code without saying where the tensors should land (TD166).

Left alone: a function that places other loads itself (it handles the device on purpose), a
checkpoint that only a GradScaler reads (floats and ints: nothing to place), a load of what the
same function saved (one process reads back its own tensors, on its own device), and a
`test_*` function (pytest runs it in one process).
"""

from __future__ import annotations

import ast

from torchdoctor.linter.api import FILE_END, Context, lint_check, may_pass
from torchdoctor.linter.flow import is_scaler
from torchdoctor.rules.distributed.checkpoint_load_without_map_location import (
    RULE as CHECKPOINT_LOAD_WITHOUT_MAP_LOCATION,
)

_DISTRIBUTED = ("torch.distributed.init_process_group", "torch.nn.parallel.DistributedDataParallel")


@lint_check(CHECKPOINT_LOAD_WITHOUT_MAP_LOCATION, ast.Call, names={"load"})
def torch_load(node: ast.Call, ctx: Context) -> None:
    if ctx.qualified(node.func) != "torch.load":
        return
    if may_pass(node, "map_location", 1):
        ctx.memo.setdefault("TD166-placed", set()).add(id(ctx.scope))
    elif not _read_by_scaler(node, ctx):
        ctx.memo.setdefault(CHECKPOINT_LOAD_WITHOUT_MAP_LOCATION.code, []).append((ctx.scope, node, ctx.statement))


def _read_by_scaler(node: ast.Call, ctx: Context) -> bool:
    """`scaler.load_state_dict(torch.load(path))`."""
    parent = ctx.parent
    return (isinstance(parent, ast.Call) and isinstance(parent.func, ast.Attribute)
            and parent.func.attr == "load_state_dict" and node in parent.args and is_scaler(parent.func.value, ctx))


@lint_check(CHECKPOINT_LOAD_WITHOUT_MAP_LOCATION, ast.Call, names={"load_state_dict"})
def scaler_state_loaded(node: ast.Call, ctx: Context) -> None:
    """`scaler_state = torch.load(path)` ... `scaler.load_state_dict(scaler_state)`."""
    if isinstance(node.func, ast.Attribute) and node.args and isinstance(node.args[0], ast.Name) and is_scaler(
            node.func.value, ctx):
        ctx.memo.setdefault("TD166-scaler", set()).add((id(ctx.scope), node.args[0].id))


@lint_check(CHECKPOINT_LOAD_WITHOUT_MAP_LOCATION, ast.Call, names={"save"})
def saved_here(node: ast.Call, ctx: Context) -> None:
    if ctx.qualified(node.func) == "torch.save":
        ctx.memo.setdefault("TD166-saved", {}).setdefault(id(ctx.scope), node.lineno)


@lint_check(CHECKPOINT_LOAD_WITHOUT_MAP_LOCATION, ast.Call, names={"init_process_group", "DistributedDataParallel"})
def distributed_code(node: ast.Call, ctx: Context) -> None:
    if ctx.qualified(node.func) in _DISTRIBUTED:
        ctx.memo["TD166-distributed"] = True


@lint_check(CHECKPOINT_LOAD_WITHOUT_MAP_LOCATION, FILE_END)
def report_loads_without_location(tree: ast.Module, ctx: Context) -> None:
    if not ctx.memo.get("TD166-distributed"):
        return
    placed = ctx.memo.get("TD166-placed", set())
    scaler = ctx.memo.get("TD166-scaler", set())
    saved = ctx.memo.get("TD166-saved", {})
    for scope, node, statement in ctx.memo.get(CHECKPOINT_LOAD_WITHOUT_MAP_LOCATION.code, []):
        if id(scope) in placed:  # a function that places other loads handles the device on purpose
            continue
        if isinstance(statement, ast.Assign) and statement.value is node and len(statement.targets) == 1 and (
                isinstance(statement.targets[0], ast.Name) and (id(scope), statement.targets[0].id) in scaler):
            continue  # a GradScaler's state: floats and ints
        if saved.get(id(scope), node.lineno + 1) < node.lineno:
            continue  # reads back what this very function saved: this process's own devices
        if scope.name.rpartition(".")[2].startswith("test"):
            continue  # a test function: pytest runs it in a single process
        ctx.report(CHECKPOINT_LOAD_WITHOUT_MAP_LOCATION, node)
