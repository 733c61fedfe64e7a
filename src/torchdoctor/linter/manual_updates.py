"""A hand-written parameter update (`p -= lr * p.grad`, `p.data.add_(p.grad, ...)`) in a loop over
parameters: what TD110/TD111 (checks/manual_update.py) and the training-step checks
(checks/training_step.py) both look for in a loop."""

from __future__ import annotations

import ast

from torchdoctor.linter.names import dotted

_IN_PLACE = frozenset({"add_", "sub_"})


def manual_update(loop: ast.AST) -> ast.stmt | None:
    """The first statement of the loop that moves a parameter by its own gradient, in a loop over
    parameters (`for p in model.parameters():`, `for param in params:`): `p.data.add_(-lr * p.grad)`,
    `p.data.sub_(lr * p.grad)`, `p -= lr * p.grad`, `p.data = p.data - lr * p.grad`. (A perturbation
    of the input moved by its gradient's sign is an attack's ascent, not an update of the model.)"""
    for inner in ast.walk(loop):
        if isinstance(inner, (ast.For, ast.AsyncFor)) and over_parameters(inner):
            found = _update_of(inner, {n.id for n in ast.walk(inner.target) if isinstance(n, ast.Name)})
            if found is not None:
                return found
    return None


def over_parameters(loop: ast.For | ast.AsyncFor) -> bool:
    iterable = loop.iter
    if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Attribute):
        return iterable.func.attr in ("parameters", "named_parameters")
    name = dotted(iterable)
    return name is not None and "param" in name.rpartition(".")[2].lower()


def _update_of(loop: ast.AST, names: set[str]) -> ast.stmt | None:
    for node in ast.walk(loop):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            call = node.value
            if isinstance(call.func, ast.Attribute) and call.func.attr in _IN_PLACE:
                target = _base(call.func.value)
                if target in names and _reads_grad_of(call, target):
                    return node
        elif isinstance(node, ast.AugAssign) and isinstance(node.op, (ast.Sub, ast.Add)):
            target = _base(node.target)
            if target in names and _reads_grad_of(node.value, target):
                return node
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = _base(node.targets[0])
            if target in names and _reads_grad_of(node.value, target):
                return node
    return None


def _base(node: ast.expr) -> str | None:
    """`p` for `p.data` and `p`."""
    name = dotted(node)
    if name is None:
        return None
    return name.removesuffix(".data")


def _reads_grad_of(node: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr == "grad" and dotted(n.value) == name for n in ast.walk(node))
