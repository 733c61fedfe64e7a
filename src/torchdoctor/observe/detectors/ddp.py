"""TD463: the parameters that will trip DistributedDataParallel's unused-parameter error, by name.

Without `find_unused_parameters=True`, DDP expects a gradient for every trainable parameter in
every synchronised backward; the first training step that leaves one without a gradient makes
the next forward raise ("Expected to have finished reduction in the prior iteration ..."), and
the message gives only parameter indices. Here: after the first synchronised forward of each
DDP wrapper (warm-up), the parameters without a gradient are noted; at the next optimizer step
that updates them, those still without a gradient are the unused ones. Reported at the line
that built the wrapper, before DDP raises.
"""

from __future__ import annotations

import weakref
from typing import Any

import torch
from torch import nn

from torchdoctor.core.locate import caller_in_user_code
from torchdoctor.observe.ddp_parameters import checked_parameters, unused_fields
from torchdoctor.observe.detector import Detector
from torchdoctor.observe.events import ModuleCall, Step
from torchdoctor.observe.instruments.distributed import DistributedIndex
from torchdoctor.observe.instruments.optim import params_of
from torchdoctor.rules.distributed.ddp_unused_parameters import RULE


def expects_every_gradient(ddp: nn.Module) -> bool:
    """DDP that raises on unused parameters: neither find_unused_parameters nor static_graph."""
    return not getattr(ddp, "find_unused_parameters", False) and not getattr(ddp, "static_graph", False)


class DDPUnusedParameters(Detector):
    ORDER = 170
    rules = (RULE,)

    def install(self) -> None:
        self.index = self.ctx.instrument(DistributedIndex)
        self._pending: weakref.WeakKeyDictionary[nn.Module, tuple[list[tuple[str, torch.Tensor]], Any]] = weakref.WeakKeyDictionary()
        self._done: weakref.WeakSet[nn.Module] = weakref.WeakSet()
        #: DDP wrapper -> the names reported for it (the crash explanation says the same)
        self.reported: weakref.WeakKeyDictionary[nn.Module, list[str]] = weakref.WeakKeyDictionary()

    def on_module_call(self, event: ModuleCall) -> None:
        ddp = event.module
        if not event.root or not event.grad_enabled or ddp not in self.index.ddp or ddp in self._done or ddp in self._pending:
            return
        if not expects_every_gradient(ddp) or not getattr(ddp, "require_backward_grad_sync", True):
            return  # no_sync(): this backward does not reduce; wait for one that does
        candidates = [(name, p) for name, p in checked_parameters(ddp) if p.grad is None]
        self._pending[ddp] = (candidates, caller_in_user_code())

    def on_step(self, event: Step) -> None:
        if not self._pending:
            return
        stepped = {id(p) for p in params_of(event.optimizer)}
        for ddp, (candidates, forward_at) in list(self._pending.items()):
            if not any(id(p) in stepped for _, p in candidates):
                continue
            del self._pending[ddp]
            self._done.add(ddp)
            unused = [name for name, p in candidates if p.grad is None]
            if not unused or len(unused) == len(candidates):
                continue  # all without gradient: this backward did not go through the model at all
            self.reported[ddp] = unused
            self.ctx.report(RULE, at=self.index.ddp.get(ddp) or forward_at, key=id(ddp), fields=unused_fields(unused),
                            evidence={"parameters": unused, "forward": list(forward_at) if forward_at else None})
