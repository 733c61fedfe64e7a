"""TD460, the rank's half: checksums of a data-parallel model's parameters, for the runner.

Which models: those whose weights every rank must hold identically, i.e. wrapped in
DistributedDataParallel, or whose gradients the script all-reduces itself (seen during the
first step). Model-parallel, sharded (FSDP) and independently trained models are left alone.

What is written: for each checked optimizer step, the sum of the bits (the tensor viewed as
integers) of every parameter before the step, of its gradient, and of the parameter after the
step, plus the learning rates. Identical weights give identical sums; one changed bit changes
the sum. Checked steps: 1, 2, 3, 4, then powers of two up to `EVERY`, then every `EVERY`-th.
The sums are computed on the parameters' device; on a GPU they are copied to pinned memory
without waiting, and read at the next checked step or at exit, so no step waits for the device.
Nothing is sent to the other ranks: each writes to its own record file and the runner compares
(run/ranks.py).
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

import torch
from torch.optim.optimizer import Optimizer

from torchdoctor.core.locate import caller_in_user_code
from torchdoctor.observe.detector import Detector
from torchdoctor.observe.events import ModuleCall, Step
from torchdoctor.observe.instruments.distributed import DistributedIndex
from torchdoctor.observe.instruments.optim import params_of
from torchdoctor.observe.outcome import Outcome
from torchdoctor.rules.distributed.parameters_differ_across_ranks import RULE

#: after the first steps, the checked steps are the powers of two up to EVERY, then its multiples
EVERY = 1024
#: DDP communication hooks that still give every rank the same averaged gradient (others, such
#: as post-local-SGD's, let the replicas drift on purpose between periodic averagings)
SYNCHRONISING_HOOKS = frozenset({"allreduce_hook", "fp16_compress_hook", "bf16_compress_hook", "powerSGD_hook", "batched_powerSGD_hook"})
#: the sum written for a gradient that is None
NO_GRAD = -(2**62)
_INTEGER = {8: torch.int64, 4: torch.int32, 2: torch.int16, 1: torch.int8}


def checked(step: int) -> bool:
    return step <= 4 or (step <= EVERY and step & (step - 1) == 0) or step % EVERY == 0


def bit_sum(tensor: torch.Tensor) -> torch.Tensor:
    """The sum of a tensor's bits read as integers (a 0-dim int64 on its device)."""
    tensor = tensor.detach()
    if tensor.is_complex():
        tensor = torch.view_as_real(tensor)
    if tensor.is_floating_point():
        tensor = tensor.view(_INTEGER[tensor.element_size()])
    return tensor.sum(dtype=torch.int64)


class Checkpoint:
    """The sums of one checked step, on their way to the host."""

    def __init__(self, optimizer: int, step: int, sums: torch.Tensor, lrs: list[float]) -> None:
        self.optimizer, self.step, self.lrs = optimizer, step, lrs
        self.event: Any = None
        if sums.device.type == "cuda":
            self.values = torch.empty(sums.shape, dtype=sums.dtype, pin_memory=True)
            self.values.copy_(sums, non_blocking=True)
            self.event = torch.cuda.Event()
            self.event.record()
        else:
            self.values = sums

    def ready(self, wait: bool) -> bool:
        if self.event is None or self.event.query():
            return True
        if wait:
            self.event.synchronize()
            return True
        return False

    def record(self) -> dict[str, Any]:
        values = self.values.tolist()
        third = len(values) // 3
        return {"type": "checksums", "optimizer": self.optimizer, "step": self.step, "lr": self.lrs,
                "pre": values[:third], "grad": values[third:2 * third], "post": values[2 * third:]}


class ReplicaChecksums(Detector):
    ORDER = 160
    rules = (RULE,)

    def install(self) -> None:
        self.index = self.ctx.instrument(DistributedIndex)
        self.index.attach(self.ctx.folder)
        #: optimizer -> (its number in this process, the parameters checked), None when not checked
        self._tracked: weakref.WeakKeyDictionary[Optimizer, tuple[int, list[torch.Tensor]] | None] = weakref.WeakKeyDictionary()
        self._before: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
        self._pending: list[Checkpoint] = []
        self._bypass: tuple[str, int] | None = None
        self._decided = 0  # optimizers seen stepping on a checked step, in order (the same on every rank)

    def on_module_call(self, event: ModuleCall) -> None:
        """A training forward of the model inside a DDP wrapper, called directly (warm-up only)."""
        if self._bypass is not None or not event.root or not event.grad_enabled or not self.index.ddp:
            return
        if any(event.module is getattr(ddp, "module", None) for ddp in list(self.index.ddp.keys())):
            self._bypass = caller_in_user_code()

    def on_step(self, event: Step) -> None:
        if self.index.world < 2 or self.ctx.folder is None or not checked(event.index):
            return
        if event.optimizer not in self._tracked:
            self._tracked[event.optimizer] = self._decide(event.optimizer)
        tracked = self._tracked[event.optimizer]
        if tracked is None:
            return
        params = tracked[1]
        self._before[tracked[0]] = (_sums(params), _sums([p.grad for p in params]))

    def on_step_end(self, event: Step) -> None:
        if self.index.world < 2:
            return
        self.index.reduced.clear()
        tracked = self._tracked.get(event.optimizer)
        if not tracked or tracked[0] not in self._before:
            return
        number, params = tracked
        before, grads = self._before.pop(number)
        lrs = [float(group.get("lr", 0.0)) for group in event.optimizer.param_groups]
        self._pending.append(Checkpoint(number, event.index, torch.cat([before, grads, _sums(params)]), lrs))
        self._flush(wait=False)

    def on_finish(self, outcome: Outcome) -> None:
        self._flush(wait=True)

    def _flush(self, wait: bool) -> None:
        while self._pending and self._pending[0].ready(wait):
            self.ctx.record(self._pending.pop(0).record())

    def _decide(self, optimizer: Optimizer) -> tuple[int, list[torch.Tensor]] | None:
        """Which of the optimizer's parameters every rank must hold identically; writes their names."""
        number = self._decided
        self._decided += 1
        in_ddp: dict[int, Any] = {}
        for ddp, built_at in list(self.index.ddp.items()):
            hooks = {getattr(hook, "__name__", "") for hook, _ in getattr(ddp, "_comm_hooks", ())}
            if hooks - SYNCHRONISING_HOOKS:
                continue  # a communication hook of its own: replicas may differ by design
            ignored = set(getattr(ddp, "parameters_to_ignore", ()) or ())
            for name, p in getattr(ddp, "module", ddp).named_parameters():
                if name not in ignored:
                    in_ddp[id(p)] = built_at
        reduced = self.index.reduced
        params: list[torch.Tensor] = []
        synced_by_hand = None
        for p in params_of(optimizer):
            if not isinstance(p, torch.Tensor) or p.is_meta or p.is_sparse or type(p).__name__ == "DTensor":
                continue
            if id(p) in in_ddp:
                params.append(p)
            elif p.grad is not None and p.grad.data_ptr() in reduced:
                params.append(p)
                synced_by_hand = synced_by_hand or reduced[p.grad.data_ptr()]
        devices = {p.device for p in params}
        if not params or len(devices) != 1:
            return None
        names = [self.ctx.modules.param_name(p) or f"#{i} of the optimizer" for i, p in enumerate(params)]
        ddp_at = next((in_ddp[id(p)] for p in params if id(p) in in_ddp), None)
        info = self.ctx.optimizers.known.get(optimizer)
        self.ctx.record({
            "type": "replicas", "optimizer": number, "world": self.index.world,
            "names": names, "shapes": [list(p.shape) for p in params],
            "ddp_at": ddp_at, "bypass_at": self._bypass if ddp_at else None, "synced_at": synced_by_hand,
            "optimizer_at": info.created_at if info else None,
        })
        return number, params


def _sums(tensors: Sequence[torch.Tensor | None]) -> torch.Tensor:
    """The bit sums of the tensors (NO_GRAD for None), as one int64 tensor on their device."""
    device = next((t.device for t in tensors if t is not None), torch.device("cpu"))
    parts = [bit_sum(t) if t is not None else torch.full((), NO_GRAD, dtype=torch.int64, device=device) for t in tensors]
    return torch.stack(parts) if parts else torch.zeros(0, dtype=torch.int64)
