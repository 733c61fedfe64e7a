"""Optimizers: where each was created, every step (global step hooks), every zero_grad().

`torch.optim`'s global step pre/post hooks fire for every optimizer, custom ones included
(torch patches each optimizer class's `step`). Creation and `zero_grad` have no hooks, so
`Optimizer.__init__`, `Optimizer.zero_grad` and `Module.zero_grad` get observing stand-ins.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.optim.optimizer import Optimizer, register_optimizer_step_post_hook, register_optimizer_step_pre_hook

from torchdoctor.core.locate import caller_in_user_code
from torchdoctor.observe.events import Location, Step
from torchdoctor.observe.faults import contain
from torchdoctor.observe.instruments.compiled import traced
from torchdoctor.observe.patching import Patches, observed, observed_init


@dataclass
class OptimizerInfo:
    created_at: Location | None
    steps: int = 0


class OptimizerIndex:
    """Every optimizer of the process, with its creation line and step count."""

    def __init__(
        self,
        *,
        on_step: Callable[[Step], None],
        on_step_end: Callable[[Step], None],
        on_zero_grad: Callable[[nn.Module | Optimizer, bool], None],
    ) -> None:
        self.known: weakref.WeakKeyDictionary[Optimizer, OptimizerInfo] = weakref.WeakKeyDictionary()
        self.total_steps = 0
        self._on_step = on_step
        self._on_step_end = on_step_end
        self._on_zero_grad = on_zero_grad

    def install(self, patches: Patches) -> None:
        patches.hold(register_optimizer_step_pre_hook(contain("the optimizer observer", self._pre)))
        patches.hold(register_optimizer_step_post_hook(contain("the optimizer observer", self._post)))
        patches.set(Optimizer, "__init__", observed_init(Optimizer.__init__, self._created))
        for owner in (Optimizer, nn.Module):
            original = owner.zero_grad
            patches.set(owner, "zero_grad", observed(original, self._zero_grad, skip=traced))

    def optimized(self) -> set[int]:
        """The ids of every parameter some optimizer of the process updates."""
        return {id(p) for optimizer in list(self.known.keys()) for p in params_of(optimizer)}

    def info(self, optimizer: Optimizer) -> OptimizerInfo:
        info = self.known.get(optimizer)
        if info is None:
            info = self.known[optimizer] = OptimizerInfo(created_at=None)
        return info

    def _created(self, optimizer: Optimizer) -> None:
        self.known[optimizer] = OptimizerInfo(created_at=caller_in_user_code())

    def _pre(self, optimizer: Optimizer, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        info = self.info(optimizer)
        self._on_step(Step(optimizer, info.steps + 1, _has_closure(args, kwargs)))

    def _post(self, optimizer: Optimizer, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        info = self.info(optimizer)
        info.steps += 1
        self.total_steps += 1
        self._on_step_end(Step(optimizer, info.steps, _has_closure(args, kwargs)))

    def _zero_grad(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        owner: Any = args[0] if args else kwargs.get("self")
        set_to_none = kwargs.get("set_to_none", args[1] if len(args) > 1 else True)
        self._on_zero_grad(owner, bool(set_to_none))


def _has_closure(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """`step(closure)`: the hooks get `step`'s arguments with the optimizer first."""
    return (len(args) > 1 and callable(args[1])) or callable(kwargs.get("closure"))


def params_of(optimizer: Optimizer) -> Iterator[torch.Tensor]:
    for group in optimizer.param_groups:
        yield from group["params"]
