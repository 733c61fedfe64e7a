"""TD564: an argparse option whose value type is not what the script reads.

`type=bool`; a number default with neither `type=` nor `action=`; `type=int` with a default
that is a fraction (`0.2`, `0.0`, `1.0`). Only in a file that imports argparse, so that `add_argument` is argparse's (config
libraries with an `add_argument` of their own infer types from defaults).
"""

from __future__ import annotations

import ast

from torchdoctor.linter.api import Context, lint_check
from torchdoctor.rules.api.argparse_value_type import RULE


@lint_check(RULE, ast.Call, names={"add_argument"}, needs_text={"argparse"})
def argparse_value_type(node: ast.Call, ctx: Context) -> None:
    if not isinstance(node.func, ast.Attribute) or not _imports_argparse(ctx):
        return
    option = _option(node)
    keywords = {k.arg: k.value for k in node.keywords if k.arg is not None}
    if option is None or any(k.arg is None for k in node.keywords):
        return  # `**options`: the type may be in there
    kind = keywords.get("type")
    default = _number(keywords.get("default"))
    if isinstance(kind, ast.Name) and kind.id == "bool" and "bool" not in ctx.module_scope.bindings:
        ctx.report(RULE, node, fields={"option": option})
    elif kind is None and default is not None and "action" not in keywords and "nargs" not in keywords:
        ctx.report(RULE, node, fields={"option": option, "default": repr(default),
                                        "type": type(default).__name__}, variant="missing")
    elif isinstance(kind, ast.Name) and kind.id == "int" and isinstance(default, float) and _fraction_like(default):
        ctx.report(RULE, node, fields={"option": option, "default": repr(default)}, variant="int-float")


def _imports_argparse(ctx: Context) -> bool:
    return any(name == "argparse" or name.startswith("argparse.") for name in ctx.imports.names.values())


def _fraction_like(value: float) -> bool:
    """A float default that says the option is a fraction (`0.2`, `0.0`, `1.0`); `1e6` or
    `25000.0` is a count written as a float, which reaches the code as a float and works."""
    return not value.is_integer() or abs(value) <= 1


def _option(node: ast.Call) -> str | None:
    """The option's longest flag (`--lr` of `"-l", "--lr"`); None for a positional argument."""
    flags = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    if not flags or len(flags) != len(node.args) or not all(flag.startswith("-") for flag in flags):
        return None
    return max(flags, key=len)


def _number(node: ast.expr | None) -> int | float | None:
    """The int or float a literal default holds (`0.01`, `-1`, `1e-4`); None for anything else."""
    sign = 1
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node, sign = node.operand, -1
    value = node.value if isinstance(node, ast.Constant) else None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return sign * value
    return None

