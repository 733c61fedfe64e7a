"""TD170 for one loss of several: in a loop that backpropagates its losses one by one
(`errD_real.backward()`, `errD_fake.backward()`), a loss computed by the same loss function that
no backward() reaches, neither itself nor any value made from it. A dropped `backward()` of one
term leaves the model trained on the others only (a discriminator that never sees real images).

Left alone: losses computed under `no_grad`, losses handed to any call but a plain read
(`.item()`, `print`), returned, stored, or summed into something that backpropagates.
"""

from __future__ import annotations

import ast

from torchdoctor.linter.api import FILE_END, Context, dotted, lint_check
from torchdoctor.linter.names import mentions
from torchdoctor.linter.steps import TRACKED, is_backward, loop_events
from torchdoctor.rules.optimizer.backward_missing import RULE as BACKWARD_MISSING

#: reads of a loss that do not train with it
_READS = frozenset({"item", "detach", "cpu", "numpy", "tolist", "float", "mean", "sum"})
_PRINTS = frozenset({"print", "float", "str", "format", "round"})


@lint_check(BACKWARD_MISSING, ast.Assign)
def loss_term(node: ast.Assign, ctx: Context) -> None:
    """`errD_real = criterion(output, label)` in a loop, with gradients on: remember its loss function."""
    if not ctx.loops or ctx.grad_disabled or len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
        return
    value = node.value
    if not isinstance(value, ast.Call):
        return
    kind = ctx.kind(value.func)
    qualified = ctx.qualified(value.func) or ""
    if kind is not None and kind.tag == "loss_fn" or qualified.startswith("torch.nn.functional.") and "loss" in qualified:
        ctx.memo.setdefault("TD170-terms", []).append((ctx.scope, ctx.loops[-1], node, dotted(value.func)))


@lint_check(BACKWARD_MISSING, FILE_END, tracks=TRACKED)
def report_terms_without_backward(tree: ast.Module, ctx: Context) -> None:
    terms = ctx.memo.get("TD170-terms", [])
    said: set[str] = set()  # one finding per value: `d_loss = (real_loss + fake_loss) / 2` once
    for scope, loop, node, function in terms:
        name = node.targets[0].id
        siblings = [n.targets[0].id for s, lp, n, f in terms
                    if s is scope and lp is loop and f == function and n is not node]
        backpropagated = {e.receiver for e in loop_events(scope, loop) if is_backward(e) and e.receiver}
        trained = [s for s in siblings if s in backpropagated]
        made = _made_from(name, loop)
        if not trained or made is None or made & said or _reaches_training(made, loop, backpropagated):
            continue
        said |= made
        ctx.report(BACKWARD_MISSING, node, variant="untrained-term",
                   fields={"term": name, "function": function, "trained": trained[0]})


def _made_from(name: str, loop: ast.AST) -> set[str] | None:
    """`name` and the names the loop makes from it (`errD = errD_real + errD_fake`), or None when
    a value made from it is stored on an attribute or in a container."""
    made = {name}
    changed = True
    while changed:
        changed = False
        for node in ast.walk(loop):
            if isinstance(node, (ast.Assign, ast.AugAssign)) and mentions(node.value, made):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if not isinstance(target, ast.Name):
                        return None
                    if target.id not in made:
                        made.add(target.id)
                        changed = True
    return made


def _reaches_training(made: set[str], loop: ast.AST, backpropagated: set[str]) -> bool:
    """One of `made` is backpropagated, or goes where it might be (a call other than a plain
    read, a return)."""
    if made & backpropagated:
        return True
    for node in ast.walk(loop):
        if isinstance(node, (ast.Return, ast.Yield)) and node.value is not None and mentions(node.value, made):
            return True
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in made:
                if func.attr not in _READS:
                    return True
            elif any(mentions(a, made) for a in [*node.args, *(k.value for k in node.keywords)]):
                if not (isinstance(func, ast.Name) and func.id in _PRINTS or isinstance(func, ast.Attribute) and func.attr in _READS):
                    return True
    return False
