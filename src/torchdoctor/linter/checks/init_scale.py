"""TD177: a layer's weight initialised with a spread the source fixes far too large.

Only what the source fixes is judged: constants, arithmetic on them, and names the function (or
the module) binds to one. A spread computed from the layer (`std=dim ** -0.5`) is unknown and
left alone, and so is any tensor that is not a `weight` (an `A_log` drawn from 1 to 16 is meant).
"""

from __future__ import annotations

import ast
import math

from torchdoctor.linter.api import Context, argument, dotted, lint_check
from torchdoctor.rules.numerics.init_scale_too_large import RULE as INIT_SCALE_TOO_LARGE

#: spreads above this standard deviation are reported (no layer is initialised at 2)
TOO_LARGE = 2.0
_INIT = "torch.nn.init."
_NORMAL = frozenset({"normal_", "trunc_normal_"})


@lint_check(INIT_SCALE_TOO_LARGE, ast.Call, names={"normal_", "uniform_", "trunc_normal_"})
def init_scale(node: ast.Call, ctx: Context) -> None:
    func = node.func
    if not isinstance(func, ast.Attribute):
        return
    qualified = ctx.qualified(func) or ""
    if qualified.startswith(_INIT):  # nn.init.normal_(tensor, mean, std)
        tensor = argument(node, "tensor", 0)
        rest = 1
    elif qualified == "":  # tensor.normal_(mean, std)
        tensor, rest = func.value, 0
    else:
        return
    name = dotted(tensor) if tensor is not None else None
    if name is None or not (name.endswith(".weight") or name.endswith(".weight.data")):
        return
    constants = _constants(ctx)
    if func.attr in _NORMAL:
        spread = argument(node, "std", rest + 1)
        std = _number(spread, constants) if spread is not None else None
        how = f"`std={ctx.text(spread)}`" if spread is not None else ""
    else:
        low, high = (argument(node, n, rest + i) for i, n in enumerate(("a" if rest else "from", "b" if rest else "to")))
        a = _number(low, constants) if low is not None else None
        b = _number(high, constants) if high is not None else None
        std = (b - a) / math.sqrt(12) if a is not None and b is not None else None
        how = f"drawn from {ctx.text(low)} to {ctx.text(high)}" if low is not None and high is not None else ""
    if std is not None and std > TOO_LARGE:
        ctx.report(INIT_SCALE_TOO_LARGE, node, fields={"tensor": name.removesuffix(".data"), "std": std, "how": how})


def _constants(ctx: Context) -> dict[str, float]:
    """Names bound once to a number in the current function (else the module): `initrange = 0.1`."""
    scope = ctx.function if ctx.function is not None else ctx.module_scope.node
    body: list[ast.stmt] = getattr(scope, "body", [])
    found: dict[str, float] = {}
    seen: set[str] = set()
    for statement in (n for s in body for n in ast.walk(s)):
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1 and isinstance(statement.targets[0], ast.Name):
            name = statement.targets[0].id
            value = _number(statement.value, {})
            if name in seen or value is None:
                found.pop(name, None)
            else:
                found[name] = value
            seen.add(name)
    return found


def _number(node: ast.expr, names: dict[str, float]) -> float | None:
    """The value of constant arithmetic (`0.02 * 1000`, `-initrange`), or None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.Name):
        return names.get(node.id)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _number(node.operand, names)
        return None if inner is None else -inner if isinstance(node.op, ast.USub) else inner
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.Div)):
        left, right = _number(node.left, names), _number(node.right, names)
        if left is None or right is None or isinstance(node.op, ast.Div) and right == 0:
            return None
        if isinstance(node.op, ast.Add):
            return left + right
        if isinstance(node.op, ast.Sub):
            return left - right
        return left * right if isinstance(node.op, ast.Mult) else left / right
    return None
