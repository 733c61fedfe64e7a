"""TD175: activation checkpointing that falls back on the reentrant variant without saying so.

A function that tests whether its inputs require grad before checkpointing (`if self.with_cp
and x.requires_grad:`, `if not input_needs_grad: return fn(*args)`) has handled the case the
reentrant variant gets wrong, and is left alone.
"""

from __future__ import annotations

import ast
import re

from torchdoctor.core.finding import Fix
from torchdoctor.linter.api import Context, lint_check, may_pass
from torchdoctor.rules.grad_flow.checkpoint_without_use_reentrant import RULE as CHECKPOINT_WITHOUT_USE_REENTRANT

#: `torch.utils.checkpoint`, `from torch.utils import checkpoint`: the file can reach it
_IMPORTED = re.compile(r"utils(\.| import )checkpoint")
#: the public entry points and where `use_reentrant` sits among their positional parameters
_CHECKPOINTS = {"torch.utils.checkpoint.checkpoint": None, "torch.utils.checkpoint.checkpoint_sequential": 3}


def _tests_requires_grad(test: ast.expr) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr == "requires_grad"
               or isinstance(n, ast.Name) and ("requires_grad" in n.id or "needs_grad" in n.id) for n in ast.walk(test))


@lint_check(CHECKPOINT_WITHOUT_USE_REENTRANT, ast.If)
def inputs_tested(node: ast.If, ctx: Context) -> None:
    uses = ctx.memo.get("TD175-file")
    if uses is None:
        uses = ctx.memo["TD175-file"] = _IMPORTED.search(ctx.source.text) is not None
    if uses and _tests_requires_grad(node.test):
        ctx.memo.setdefault(CHECKPOINT_WITHOUT_USE_REENTRANT.code, set()).add(id(ctx.scope))


@lint_check(CHECKPOINT_WITHOUT_USE_REENTRANT, ast.Call, names={"checkpoint", "checkpoint_sequential"})
def checkpoint_without_use_reentrant(node: ast.Call, ctx: Context) -> None:
    name = ctx.qualified(node.func)
    if name not in _CHECKPOINTS or may_pass(node, "use_reentrant", _CHECKPOINTS[name]):
        return
    if id(ctx.scope) in ctx.memo.get(CHECKPOINT_WITHOUT_USE_REENTRANT.code, ()):
        return  # the function checks that some input requires grad first
    fix = Fix(title="Pass `use_reentrant=False`", edits=(ctx.add_keyword(node, "use_reentrant=False"),), safe=False)
    ctx.report(CHECKPOINT_WITHOUT_USE_REENTRANT, node, fields={"call": f"{ctx.text(node.func)}(...)"}, fix=fix)
