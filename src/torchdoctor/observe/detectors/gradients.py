"""TD120: trainable parameters, given to an optimizer, that never receive a gradient.
TD124: the same, for a model that ran only with autograd off while its output fed a model that
trained (an encoder called under `no_grad` before the decoder the loss reaches).

Checked at every optimizer step for the parameters not yet seen with a gradient (a set that
empties after the first step of a healthy run, so the cost vanishes). When a module that ran
with gradients enabled did not get any, one step is traced to find the line in the user's
code that cut the graph (`.detach()`, `.item()`, `.numpy()`, `.data`, `torch.tensor(t)`):
the cut whose input still reaches the starved parameters through the autograd graph.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from torchdoctor.core.finding import Severity
from torchdoctor.core.locate import is_user_file
from torchdoctor.introspect.graph import accumulators
from torchdoctor.introspect.tensors import tensors_in
from torchdoctor.observe.detector import Detector
from torchdoctor.observe.events import Location, ModuleCall, Step
from torchdoctor.observe.instruments.optim import params_of
from torchdoctor.observe.outcome import Outcome
from torchdoctor.observe.support import names_text
from torchdoctor.rules.grad_flow.parameter_without_gradient import RULE
from torchdoctor.rules.grad_mode.trained_model_called_under_no_grad import RULE as UNDER_NO_GRAD

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Observed

#: torch functions and Tensor methods that leave autograd (attribute reads by name, e.g. `data`)
CUTS = frozenset({"detach", "detach_", "item", "tolist", "numpy", "data", "tensor", "as_tensor"})
#: graph nodes visited at most when looking for the parameters behind a cut
GRAPH_LIMIT = 20000


@dataclass
class Starved:
    """A parameter seen at an optimizer step without a gradient (so far), and what is known of
    its module, kept as plain values: at the end of the run the model may be gone."""

    param: weakref.ref[torch.Tensor]
    name: str
    ran: str = "unknown"  # "with grad", "no grad only", "never", "unknown"
    forward: Location | None = None  # the forward of the innermost user-defined module holding it
    #: ran only under no_grad, and its model's output fed a model that ran with autograd:
    #: (that model's name, where this model was called)
    fed: tuple[str, Location | None] | None = None


@dataclass
class Cut:
    call: str
    location: Location
    node: Any  # the grad_fn of the tensor that was cut (kept alive until the trace is done)


@dataclass
class CutFinder:
    """Trace watcher: records graph cuts and keeps the first that starves a parameter."""

    targets: set[int]  # ids of starved parameters
    functions: frozenset[str] = CUTS
    cuts: list[Cut] = field(default_factory=list)
    found: dict[int, Cut] = field(default_factory=dict)

    def seen(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any, location: Location | None) -> None:
        source = args[0] if args else kwargs.get("data")
        if location is None or not isinstance(source, torch.Tensor) or source.grad_fn is None:
            return
        call = f"torch.{name}(...)" if name in ("tensor", "as_tensor") else f".{name}" if name == "data" else f".{name}()"
        self.cuts.append(Cut(call, location, source.grad_fn))

    def done(self) -> None:
        for cut in self.cuts:
            for param_id in _parameters_behind(cut.node) & self.targets:
                self.found.setdefault(param_id, cut)
        self.cuts = []


class ParametersWithoutGradient(Detector):
    ORDER = 60
    rules = (RULE, UNDER_NO_GRAD)
    #: outputs of models run without autograd, remembered during warm-up (then pruned)
    KEEP_OUTPUTS = 256

    def __init__(self, ctx: Observed) -> None:
        super().__init__(ctx)
        self._seen: set[int] = set()
        self._starved: dict[int, Starved] = {}
        self._finder: CutFinder | None = None
        self._counts: dict[int, int] = {}
        #: id(output tensor) -> (the tensor, the model that returned it with autograd off)
        self._no_grad_outputs: dict[int, tuple[weakref.ref[torch.Tensor], weakref.ref[nn.Module]]] = {}
        #: id(model run without autograd) -> (the model with autograd its output fed, where it was called)
        self._fed: dict[int, tuple[str, Location | None]] = {}

    def on_module_call(self, event: ModuleCall) -> None:
        """Warm-up, models only: what a model run without autograd returned, and whether a model
        run with autograd was then given that very tensor."""
        if not event.root:
            return
        if not event.grad_enabled:
            if len(self._no_grad_outputs) > self.KEEP_OUTPUTS:
                self._no_grad_outputs = {k: v for k, v in self._no_grad_outputs.items() if v[0]() is not None}
            for tensor in tensors_in(event.output):
                self._no_grad_outputs[id(tensor)] = (weakref.ref(tensor), weakref.ref(event.module))
            return
        if not any(p.requires_grad for p in event.module.parameters()):
            return  # a loss module, or a frozen model: nothing there trains
        for tensor in tensors_in((event.args, event.kwargs)):
            made = self._no_grad_outputs.get(id(tensor))
            producer = made[1]() if made is not None and made[0]() is tensor else None
            if producer is not None and id(producer) not in self._fed:
                self._fed[id(producer)] = (self.ctx.modules.name_of(event.module), self.ctx.modules.roots.get(producer))

    def on_step(self, event: Step) -> None:
        params = list(params_of(event.optimizer)) if self.ctx.warmup or self._grew(event.optimizer) else self._still_starved()
        for param in params:
            key = id(param)
            if key in self._seen or not param.requires_grad:
                continue
            if param.grad is not None or self._arrived(param):
                self._seen.add(key)
                self._starved.pop(key, None)
            elif key not in self._starved:
                self._starved[key] = Starved(weakref.ref(param), self.ctx.modules.param_name(param) or f"parameter {tuple(param.shape)}")
        if self.ctx.warmup:
            for starved in self._starved.values():
                self._describe(starved)
        if self._starved and self._finder is None and self.ctx.backward.completed:
            self._finder = CutFinder(targets=set(self._starved))
            self.ctx.trace_next_step(self._finder, now=True)

    def _grew(self, optimizer: Any) -> bool:
        """After warm-up, parameters are only looked at again if param groups were added."""
        count = sum(len(group["params"]) for group in optimizer.param_groups)
        grew = count != self._counts.get(id(optimizer))
        self._counts[id(optimizer)] = count
        return grew

    def _still_starved(self) -> list[torch.Tensor]:
        return [param for param in (s.param() for s in self._starved.values()) if param is not None]

    def _arrived(self, param: torch.Tensor) -> bool:
        record = self.ctx.grads.record(param)
        return record is not None and record.arrivals > 0

    def _describe(self, starved: Starved) -> None:
        """Record, while the model is alive, how the parameter's module ran and where it is."""
        param = starved.param()
        owner = self.ctx.modules.owner_of(param) if param is not None else None
        if owner is None:
            return
        use = self.ctx.modules.ran.get(owner)
        starved.ran = "never" if use is None else "with grad" if use.grad_calls else "no grad only"
        starved.forward = self._forward_of(owner)
        if starved.ran == "no grad only":
            starved.fed = self._fed.get(id(self._ancestors(owner)[-1]))

    def on_finish(self, outcome: Outcome) -> None:
        if self.ctx.backward.completed == 0 or self.ctx.steps == 0 or outcome.crashed:
            return
        groups: dict[Any, list[str]] = {}
        for key, starved in self._starved.items():
            param = starved.param()
            if key in self._seen or (param is not None and not param.requires_grad):
                continue
            if param is not None and not self.ctx.warmup:
                self._describe(starved)  # first starved after warm-up: describe it now
            if starved.ran == "no grad only":
                if starved.fed is not None:
                    groups.setdefault(("no grad", *starved.fed), []).append(starved.name)
                continue  # otherwise frozen on purpose (a teacher, a target network)
            if starved.ran == "unknown":
                continue  # in no model: a layer replaced after the optimizer was built (TD114 says so)
            cut = self._finder.found.get(key) if self._finder is not None else None
            if cut is not None:
                group: Any = ("cut", cut.call, cut.location)
            elif starved.ran == "never":
                group = ("unused", starved.forward)
            else:
                group = ("starved", starved.forward)
            groups.setdefault(group, []).append(starved.name)
        for group, names in groups.items():
            self._report(group, names)

    def _report(self, group: tuple[Any, ...], names: list[str]) -> None:
        listed = names_text(names)
        count = len(names)
        if group[0] == "cut":
            _, call, location = group
            self.ctx.report(RULE, at=location, key=group, variant="cut", fields={"count": count, "names": listed, "call": call})
        elif group[0] == "no grad":
            _, consumer, location = group
            self.ctx.report(UNDER_NO_GRAD, at=location, key=group, variant="parameters-without-gradient",
                            fields={"count": count, "names": listed, "consumer": consumer})
        elif group[0] == "unused":
            self.ctx.report(RULE, at=group[1], key=group, variant="never-ran", severity=Severity.WARNING,
                            fields={"count": count, "names": listed})
        else:
            self.ctx.report(RULE, at=group[1], key=group, fields={"count": count, "names": listed})

    def _forward_of(self, module: nn.Module | None) -> Location | None:
        """The `forward` of the innermost user-defined module holding `module` (where to look)."""
        if module is None:
            return None
        for candidate in self._ancestors(module):
            code = getattr(type(candidate).forward, "__code__", None)
            if code is not None and is_user_file(code.co_filename):
                return (code.co_filename, code.co_firstlineno)
        return None

    def _ancestors(self, module: nn.Module) -> list[nn.Module]:
        """`module`, its parent, ..., up to its model."""
        for root in self.ctx.modules.live_roots():
            for qualified, child in root.named_modules():
                if child is module:
                    parts = qualified.split(".") if qualified else []
                    return [root.get_submodule(".".join(parts[:i])) for i in range(len(parts), -1, -1)]
        return [module]


def _parameters_behind(node: Any) -> set[int]:
    """ids of the leaf tensors (parameters) the graph below `node` reaches."""
    return {id(variable) for _, variable in accumulators([node], GRAPH_LIMIT) if isinstance(variable, torch.Tensor)}
