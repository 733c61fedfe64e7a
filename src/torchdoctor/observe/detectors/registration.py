"""TD122 / TD123: trainable things a model uses but never registered, so no optimizer gets them.

During warm-up, after an optimizer step: a module that ran inside a model's forward but is not
part of any model's module tree, or a plain tensor attribute with `requires_grad=True`, that
received a gradient and is in no optimizer. Both are reported at the line that stored them
(`self.layers = [...]`, `self.scale = torch.ones(..., requires_grad=True)`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from torchdoctor.introspect.source import assignment_line
from torchdoctor.observe.detector import Detector
from torchdoctor.observe.events import Step
from torchdoctor.rules.grad_flow.module_in_plain_container import RULE as PLAIN_CONTAINER
from torchdoctor.rules.grad_flow.tensor_attribute_not_parameter import RULE as TENSOR_ATTRIBUTE

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Observed

CONTAINERS: dict[type, str] = {list: "list", tuple: "tuple", dict: "dict"}


class UnregisteredTrainables(Detector):
    ORDER = 50
    rules = (PLAIN_CONTAINER, TENSOR_ATTRIBUTE)

    def __init__(self, ctx: Observed) -> None:
        super().__init__(ctx)
        self._reported: set[tuple[int, str]] = set()

    def on_step_end(self, event: Step) -> None:
        if not self.ctx.warmup:
            return
        optimized = self.ctx.optimizers.optimized()
        registered = {id(m) for root in self.ctx.modules.live_roots() for m in root.modules()}
        unregistered = [
            m for m, use in list(self.ctx.modules.ran.items())
            if use.grad_calls and id(m) not in registered and _starved_of_optimizer(m, optimized)
        ]
        for owner in self._registered_modules():
            for attribute, value in list(vars(owner).items()):
                if attribute.startswith("_"):
                    continue
                if _trainable_tensor(value) and id(value) not in optimized:
                    self._report(TENSOR_ATTRIBUTE, owner, attribute, attribute=attribute)
                container = CONTAINERS.get(type(value))
                if container and unregistered:
                    held = [m for m in _members(value) if any(m is u for u in unregistered)]
                    if held:
                        kinds = sorted({type(m).__name__ for m in held})
                        what = f"{len(held)} `{'`/`'.join(kinds)}` module{'s' if len(held) > 1 else ''}"
                        self._report(PLAIN_CONTAINER, owner, attribute, what=what, container=container, attribute=attribute)

    def _registered_modules(self) -> list[nn.Module]:
        return [m for root in self.ctx.modules.live_roots() for m in root.modules()]

    def _report(self, rule: Any, owner: nn.Module, name: str, **fields: Any) -> None:
        key = (id(type(owner)), name)
        if key in self._reported:
            return
        self._reported.add(key)
        self.ctx.report(rule, at=assignment_line(type(owner), name), key=key, fields=fields)


def _starved_of_optimizer(module: nn.Module, optimized: set[int]) -> bool:
    """Its parameters get gradients and none is in an optimizer: they will never train."""
    params = list(module.parameters())
    return bool(params) and any(p.grad is not None for p in params) and not any(id(p) in optimized for p in params)


def _trainable_tensor(value: Any) -> bool:
    return (
        isinstance(value, torch.Tensor)
        and not isinstance(value, nn.Parameter)
        and value.requires_grad
        and value.grad_fn is None
        and value.grad is not None
    )


def _members(container: Any) -> list[Any]:
    return list(container.values()) if isinstance(container, dict) else list(container)
