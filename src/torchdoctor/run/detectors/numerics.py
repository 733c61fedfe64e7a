"""TD145: the first NaN/Inf of the run, and the op and user line that produced it.

Every step costs one finiteness check of the loss when backward() is called (for a CPU loss a
read of one number; for a GPU loss an asynchronous copy read one step later, never a sync).
Only when the loss turns non-finite does the detector work, before that backward() runs, while
the parameters are still those that produced it: if a parameter is already non-finite the
previous update was poisoned; if the batch is, the data is; otherwise the model's forward pass
is replayed on the same batch, under no_grad, with the RNG and the buffers restored after it,
through a TorchFunctionMode that stops at the first op whose inputs are finite and whose
output is not.
"""

from __future__ import annotations

import contextlib
import io
import math
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.overrides import TorchFunctionMode

from torchdoctor.core.locate import caller_in_user_code, display_path
from torchdoctor.rules.numerics.non_finite_values import RULE
from torchdoctor.run.detector import Detector
from torchdoctor.run.detectors.optimizer import names_text
from torchdoctor.run.events import Backward, Location, ModuleCall
from torchdoctor.run.faults import passes_through
from torchdoctor.run.instruments.compiled import eager
from torchdoctor.run.instruments.optim import params_of
from torchdoctor.run.instruments.trace import function_name
from torchdoctor.run.patching import call_in_mode
from torchdoctor.run.replay import leaves, strong, untouched, weak


@dataclass
class Culprit:
    op: str
    location: Location | None


class FirstNonFinite(TorchFunctionMode):
    """Finds the first torch call with finite floating inputs and a non-finite floating output."""

    def __init__(self) -> None:
        super().__init__()
        self.culprit: Culprit | None = None

    @passes_through
    def __torch_function__(self, func: Callable[..., Any], types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None) -> Any:
        kwargs = kwargs or {}
        result = call_in_mode(func, args, kwargs)
        if self.culprit is None and _any_non_finite(result) and not _any_non_finite((args, kwargs)):
            self.culprit = Culprit(function_name(func), caller_in_user_code())
        return result


class NonFiniteLoss(Detector):
    rules = (RULE,)

    def __init__(self, ctx: Any) -> None:
        super().__init__(ctx)
        self._done = False
        self._inputs: dict[int, tuple[weakref.ref[nn.Module], Any, Any]] = {}
        self._pending: _AsyncCheck | None = None

    def on_module_call(self, event: ModuleCall) -> None:
        if event.root and not self._done and event.grad_enabled:
            self._capture(event.module, event.args, event.kwargs)

    def on_backward(self, event: Backward) -> None:
        if self._done or not event.tensors:
            return
        loss = event.tensors[0]
        if not isinstance(loss, torch.Tensor) or not loss.is_floating_point():
            return
        if loss.device.type == "cpu":
            if not _finite(loss):
                self._explain(loss)
            return
        if self._pending is None:
            self._pending = _AsyncCheck()
        if self._pending.poll():
            self._explain(loss, late=True)
        else:
            self._pending.submit(loss)

    # -- the model's inputs, as weak references: during warm-up from the module hooks, then
    # -- from a watch on each model (one Python call per step, nothing attached to the model)

    def on_warmup_end(self) -> None:
        for root in self.ctx.model_roots():
            self.ctx.hold(self.ctx.modules.watch(root, self._watched_call))

    def _watched_call(self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], _output: Any) -> None:
        if not self._done and torch.is_grad_enabled():
            self._capture(module, args, kwargs)

    def _capture(self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if any(True for _ in module.parameters(recurse=False)) or module._modules:
            self._inputs[id(module)] = (weakref.ref(module), weak(args), weak(kwargs))

    # -- explaining ---------------------------------------------------------------------------

    def _explain(self, loss: torch.Tensor, late: bool = False) -> None:
        self._done = True
        step = self.ctx.steps + (0 if not late else -1)
        evidence = {"step": step + 1}
        poisoned = self._non_finite_parameters()
        if poisoned:
            self.ctx.report(
                RULE,
                what=f"the loss at step {step + 1}",
                origin=f"the parameters {names_text(poisoned)}, which an earlier optimizer step filled with NaN/Inf (the loss before it was finite: its gradients were not)",
                hint="Clip the gradients (`torch.nn.utils.clip_grad_norm_`), lower the learning rate, and guard ops whose gradient is infinite at 0 (`sqrt`, `norm`, `pow` with exponent < 1) with an epsilon.",
                evidence=evidence,
            )
            return
        replayed = self._replay()
        if replayed is None:
            self.ctx.report(RULE, what=f"the loss at step {step + 1}", origin="the loss computation (the model could not be replayed to find the op)", evidence=evidence)
            return
        kind, culprit, root_line = replayed
        if kind == "data":
            where = f" passed at {display_path(root_line[0])}:{root_line[1]}" if root_line else ""
            self.ctx.report(
                RULE,
                at=root_line or True,
                what="the model's input batch",
                origin=f"the data: the batch{where} already contains NaN/Inf",
                hint="Check the dataset and its transforms for NaN/Inf (missing values, division by a zero std, log of 0) and filter or impute them.",
                evidence=evidence,
            )
        elif kind == "op" and culprit is not None:
            self.ctx.report(
                RULE,
                at=culprit.location or True,
                what=f"the loss at step {step + 1}",
                origin=f"`{culprit.op}` on this line: its inputs are finite, its output is not",
                evidence={**evidence, "op": culprit.op},
            )
        else:
            self.ctx.report(
                RULE,
                what=f"the loss at step {step + 1}",
                origin="the loss computation: the model's output is finite, the loss computed from it before this backward() is not",
                hint="Look at the loss code for log(0), division by zero or sqrt of a negative; clamp probabilities (`p.clamp_min(1e-7)`) or use the logits versions (`cross_entropy`, `binary_cross_entropy_with_logits`).",
                evidence=evidence,
            )

    def _non_finite_parameters(self) -> list[str]:
        """Names of the non-finite parameters of the models and optimizers."""
        params: dict[int, tuple[str, torch.Tensor]] = {}
        for root in self.ctx.model_roots():
            for name, param in root.named_parameters():
                params.setdefault(id(param), (self.ctx.modules.param_name(param) or name, param))
        for optimizer in list(self.ctx.optimizers.known.keys()):
            for param in params_of(optimizer):
                params.setdefault(id(param), (self.ctx.modules.param_name(param) or f"parameter {tuple(param.shape)}", param))
        return [name for name, param in params.values() if param.is_floating_point() and not _finite(param)]

    def _replay(self) -> tuple[str, Culprit | None, Location | None] | None:
        for ref, args, kwargs in list(self._inputs.values()):
            root = ref()
            real_args, real_kwargs = strong(args), strong(kwargs)
            if root is None or real_args is None or real_kwargs is None:
                continue
            root_line = self.ctx.modules.roots.get(root)
            if _any_non_finite((real_args, real_kwargs)):
                return "data", None, root_line
            tracer = FirstNonFinite()
            try:
                with untouched(root), torch.no_grad(), contextlib.redirect_stdout(io.StringIO()), tracer:
                    output = eager(root)(*real_args, **real_kwargs)
            except Exception:  # noqa: BLE001 - a forward that cannot be replayed: say less
                continue
            if tracer.culprit is not None:
                return "op", tracer.culprit, root_line
            if not _any_non_finite(output):
                return "loss", None, root_line
        return None


class _AsyncCheck:
    """A GPU loss's finiteness, copied to pinned host memory without waiting; read next step."""

    def __init__(self) -> None:
        self._flag = torch.ones((), dtype=torch.bool).pin_memory()
        self._event: Any = None

    def submit(self, loss: torch.Tensor) -> None:
        if self._event is not None and not self._event.query():
            return  # the device is behind: skip this step rather than wait
        self._flag.copy_(torch.isfinite(loss.detach()).all(), non_blocking=True)
        self._event = torch.cuda.Event()
        self._event.record()

    def poll(self) -> bool:
        """True when an earlier loss turned out non-finite."""
        return self._event is not None and self._event.query() and not bool(self._flag)


def _finite(tensor: torch.Tensor) -> bool:
    if tensor.numel() == 1:
        return math.isfinite(tensor.item())
    return bool(torch.isfinite(tensor.detach()).all())


def _any_non_finite(value: Any) -> bool:
    return any(
        isinstance(leaf, torch.Tensor) and leaf.is_floating_point() and leaf.numel() > 0 and not bool(torch.isfinite(leaf.detach()).all())
        for leaf in leaves(value)
    )
