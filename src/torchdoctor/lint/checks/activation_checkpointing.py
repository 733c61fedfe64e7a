"""TD175: activation checkpointing that falls back on the reentrant variant without saying so."""

from __future__ import annotations

import ast

from torchdoctor.core.finding import Fix
from torchdoctor.lint.api import Context, check, may_pass

#: the public entry points and where `use_reentrant` sits among their positional parameters
_CHECKPOINTS = {"torch.utils.checkpoint.checkpoint": None, "torch.utils.checkpoint.checkpoint_sequential": 3}


@check("TD175", ast.Call, names={"checkpoint", "checkpoint_sequential"})
def checkpoint_without_use_reentrant(node: ast.Call, ctx: Context) -> None:
    name = ctx.qualified(node.func)
    if name not in _CHECKPOINTS or may_pass(node, "use_reentrant", _CHECKPOINTS[name]):
        return
    fix = Fix(title="Pass `use_reentrant=False`", edits=(ctx.add_keyword(node, "use_reentrant=False"),), safe=False)
    ctx.report("TD175", node, call=f"{ctx.text(node.func)}(...)", fix=fix)
