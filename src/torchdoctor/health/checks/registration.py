"""Weights that nn.Module does not see (TD122, TD123).

Modules or parameters kept in plain lists, tuples or dicts, and tensors with
`requires_grad=True` kept as plain attributes, are invisible to `parameters()`, `.to()`,
`state_dict()` and `train()/eval()`. Objects that are registered elsewhere in the model (a
convenience list of registered layers) and frozen objects hidden on purpose (a teacher kept
out of the state_dict) are not reported.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch
from torch import nn

from torchdoctor.core.wording import article
from torchdoctor.health.context import CheckContext
from torchdoctor.health.outcome import Outcome
from torchdoctor.introspect.sites import where
from torchdoctor.rules.grad_flow.module_in_plain_container import RULE as PLAIN_CONTAINER
from torchdoctor.rules.grad_flow.tensor_attribute_not_parameter import RULE as TENSOR_ATTRIBUTE

NAME = "registration"
ORDER = 50  # its place in the report (core/plugins.py)
TITLE = "every weight is registered with its module"
#: what the check does, in its row of docs/check.md's table (`python -m torchdoctor.dev generate`)
DOES = "modules or parameters in plain lists/dicts, `requires_grad` tensors kept as plain attributes"
RULES = (PLAIN_CONTAINER.code, TENSOR_ATTRIBUTE.code)

_MODULE_INTERNALS = frozenset(vars(nn.Module()))
_MODE_DEPENDENT = (nn.modules.dropout._DropoutNd, nn.modules.batchnorm._NormBase)


def _contained(value: Any, depth: int = 0) -> Iterator[Any]:
    """Items of (nested) plain containers."""
    if depth > 2:
        return
    items = value.values() if isinstance(value, dict) else value
    for item in items:
        if isinstance(item, (list, tuple, dict)) and not isinstance(item, nn.Module):
            yield from _contained(item, depth + 1)
        else:
            yield item


def _matters(item: Any, registered_params: set[int], registered_modules: set[int]) -> bool:
    """A hidden object that changes training: it has trainable parameters, or behaves
    differently in train and eval mode."""
    if isinstance(item, nn.Parameter):
        return item.requires_grad and id(item) not in registered_params
    if isinstance(item, nn.Module) and id(item) not in registered_modules:
        trainable = any(p.requires_grad and id(p) not in registered_params for p in item.parameters())
        return trainable or any(isinstance(m, _MODE_DEPENDENT) for m in item.modules())
    return False


def _describe(items: list[Any]) -> str:
    kinds: dict[str, int] = {}
    for item in items:
        label = "nn.Parameter" if isinstance(item, nn.Parameter) else f"nn.{type(item).__name__}" if type(item).__module__.startswith("torch.nn") else type(item).__name__
        kinds[label] = kinds.get(label, 0) + 1
    parts = [f"{n} {label}{' layers' if label != 'nn.Parameter' else 's'}" if n > 1 else article(label) for label, n in kinds.items()]
    return " and ".join(parts)


def run(ctx: CheckContext) -> Outcome:
    model = ctx.subject.model
    registered_params = {id(p) for p in model.parameters()}
    registered_modules = {id(m) for m in model.modules()}
    findings = []
    for module_name, module in model.named_modules():
        for attribute, value in vars(module).items():
            if attribute in _MODULE_INTERNALS:
                continue
            prefix = f"{module_name}." if module_name else ""
            if isinstance(value, (list, tuple, dict)) and not isinstance(value, nn.Module):
                hidden = [item for item in _contained(value) if _matters(item, registered_params, registered_modules)]
                if hidden:
                    container = type(value).__name__ if type(value) in (list, tuple, dict) else f"{type(value).__name__} (a plain container)"
                    findings.append(PLAIN_CONTAINER.finding(
                        **where(ctx.locate.attribute(module, attribute)),
                        fields={"what": _describe(hidden), "container": container,
                                "attribute": f"{prefix}{attribute}" if not prefix else attribute},
                        evidence={"module": module_name, "attribute": attribute, "count": len(hidden)},
                    ))
            elif (
                isinstance(value, torch.Tensor)
                and not isinstance(value, nn.Parameter)
                and value.requires_grad
                and value.is_leaf
                and id(value) not in registered_params
            ):
                findings.append(TENSOR_ATTRIBUTE.finding(
                    **where(ctx.locate.attribute(module, attribute)), fields={"attribute": attribute},
                    evidence={"module": module_name, "attribute": attribute},
                ))
    count = sum(1 for _ in model.parameters())
    return Outcome(findings, detail=f"{count} registered parameter tensors in {len(registered_modules)} modules")
