"""TD146: float64 creeping into float32 training, seen on live tensors.

Three places, each cheap: the loss call (a float64 output or target next to float32 weights:
two dtype reads per call), the first step of each optimizer (float64 parameters beside float32
ones: one pass over its parameters), and, during warm-up, the module whose output first turns
float64 (to point at the forward() that does it).
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

import torch

from torchdoctor.introspect.sites import attribute_site, definition_site
from torchdoctor.introspect.tensors import tensors_in
from torchdoctor.observe.detector import Detector
from torchdoctor.observe.events import Location, LossCall, ModuleCall, Step
from torchdoctor.observe.instruments.optim import params_of
from torchdoctor.observe.support import first_tensor, listing
from torchdoctor.rules.dtype.unintended_float64 import RULE as FLOAT64

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Observed

LOW_PRECISION = (torch.float32, torch.float16, torch.bfloat16)


class Float64(Detector):
    """TD146: float64 outputs, targets or parameters in a model trained in float32."""

    ORDER = 300
    rules = (FLOAT64,)

    def __init__(self, ctx: Observed) -> None:
        super().__init__(ctx)
        self._checked: weakref.WeakSet[Any] = weakref.WeakSet()
        self._origin: tuple[str, Location | None] | None = None
        self._loss_done: set[str] = set()

    def on_module_call(self, event: ModuleCall) -> None:
        """Remember the first module whose output is float64 though nothing float64 went in."""
        if self._origin is not None:
            return
        output = first_tensor(event.output)
        if output is None or output.dtype != torch.float64:
            return
        inputs = [t for t in tensors_in((event.args, event.kwargs)) if t.is_floating_point()]
        if any(t.dtype == torch.float64 for t in inputs):
            return
        module = event.module
        site = definition_site(type(module).forward)  # None for torch's own modules
        self._origin = (self.ctx.modules.name_of(module), (site.file, site.line) if site else None)

    def on_loss(self, event: LossCall) -> None:
        if len(self._loss_done) == 2:
            return
        output, target = event.input, event.target
        if "output" not in self._loss_done and output.dtype == torch.float64 and self._weights_dtype() in LOW_PRECISION:
            self._loss_done.add("output")
            origin = self._origin
            where = f" (it first appears in the output of `{origin[0]}`)" if origin else ""
            self.ctx.report(
                FLOAT64, at=origin[1] if origin and origin[1] else True, key="output",
                fields={"what": f"the model output reaching `{event.function}`{where}",
                        "other": "the model's parameters",
                        "consequence": "something in forward() promotes to float64 (a float64 tensor or NumPy array mixed in), "
                    "and everything after it runs in float64"},
            )
        if ("target" not in self._loss_done and isinstance(target, torch.Tensor) and target.dtype == torch.float64
                and output.dtype in LOW_PRECISION):
            self._loss_done.add("target")
            self.ctx.report(
                FLOAT64, key="target",
                fields={"what": f"the target of `{event.function}`", "other": "the model output",
                        "consequence": "the loss and its gradient are computed in float64"},
            )

    def on_step(self, event: Step) -> None:
        optimizer = event.optimizer
        if optimizer in self._checked:
            return
        self._checked.add(optimizer)
        params = [p for p in params_of(optimizer) if p.is_floating_point()]
        doubles = [p for p in params if p.dtype == torch.float64]
        if not doubles or len(doubles) == len(params):
            return  # float32 throughout, or float64 throughout on purpose
        names = [self.ctx.modules.param_name(p) or "?" for p in doubles]
        self.ctx.report(
            FLOAT64, at=self._where(doubles[0], optimizer), key="parameters",
            fields={"what": f"parameter(s) {listing(names)}", "other": "the rest of the model",
                    "consequence": "layers that mix them compute in float64 (many times slower on a GPU) or fail with a dtype error"},
            evidence={"parameters": names},
        )

    def _weights_dtype(self) -> torch.dtype | None:
        """The dtype most trained parameters have (None when no optimizer is known)."""
        counts: dict[torch.dtype, int] = {}
        for optimizer in list(self.ctx.optimizers.known.keys()):
            for p in params_of(optimizer):
                counts[p.dtype] = counts.get(p.dtype, 0) + p.numel()
        return max(counts, key=counts.__getitem__) if counts else None

    def _where(self, param: torch.Tensor, optimizer: Any) -> Location | bool:
        """The `self.<name> = ...` line that made the parameter, else the optimizer's line."""
        owner = self.ctx.modules.owner_of(param)
        if owner is not None:
            attribute = next((k for k, v in owner._parameters.items() if v is param), None)
            site = attribute_site(type(owner), attribute) if attribute else None
            if site is not None:
                return (site.file, site.line)
        created = self.ctx.optimizers.info(optimizer).created_at
        return created or True
