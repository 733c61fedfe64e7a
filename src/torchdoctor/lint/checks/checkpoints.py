"""`torch.load` in distributed code without saying where the tensors should land (TD166)."""

from __future__ import annotations

import ast

from torchdoctor.lint.api import FILE_END, Context, check, may_pass

_DISTRIBUTED = ("torch.distributed.init_process_group", "torch.nn.parallel.DistributedDataParallel")


@check("TD166", ast.Call, names={"load"})
def torch_load(node: ast.Call, ctx: Context) -> None:
    if ctx.qualified(node.func) != "torch.load":
        return
    if may_pass(node, "map_location", 1):
        ctx.memo.setdefault("TD166-placed", set()).add(id(ctx.scope))
    else:
        ctx.memo.setdefault("TD166", []).append((ctx.scope, node))


@check("TD166", ast.Call, names={"init_process_group", "DistributedDataParallel"})
def distributed_code(node: ast.Call, ctx: Context) -> None:
    if ctx.qualified(node.func) in _DISTRIBUTED:
        ctx.memo["TD166-distributed"] = True


@check("TD166", FILE_END)
def report_loads_without_location(tree: ast.Module, ctx: Context) -> None:
    if not ctx.memo.get("TD166-distributed"):
        return
    placed = ctx.memo.get("TD166-placed", set())
    for scope, node in ctx.memo.get("TD166", []):
        if id(scope) not in placed:  # a function that places other loads handles the device on purpose
            ctx.report("TD166", node)
