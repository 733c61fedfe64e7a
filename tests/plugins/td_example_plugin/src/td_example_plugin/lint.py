"""The lint check of TD998, registered when torchdoctor imports this module."""

import ast

from td_example_plugin.rules import RULE
from torchdoctor.linter.api import Context, lint_check


@lint_check(RULE, ast.Call, names={"print"})
def print_in_forward(node: ast.Call, ctx: Context) -> None:
    if isinstance(node.func, ast.Name) and node.func.id == "print" and ctx.in_forward:
        ctx.report(RULE, node)
