"""Units that stop learning: ReLU units dead over a whole batch (TD484), sigmoid/tanh units fed
inputs in their flat region (TD485), layers whose gradients vanish from the first steps (TD486),
and activations whose scale explodes or collapses with depth at the first step (TD487).

Activations are sampled, never followed: the warm-up's forwards (steps 1-3, through the global
module hooks that are on then) and one training forward at each of the optimizer steps in
`SAMPLE_STEPS`, through `ctx.modules.watch()` on the activation layers for that forward only
(the watches are removed at the next step: no cost on the other steps). A unit is a feature of
the layer's output (dim 1: a Linear's feature, a convolution's channel, counted over the batch
and the positions).

Thresholds follow SageMaker Debugger's DeadRelu / SaturatedActivation defaults: a layer is
reported when more than 50% of its units are dead (a ReLU unit: zero for every sample of the
batch and every position), or more than 50% of its inputs saturated, at each of `PERSIST`
sampled steps in a row. Debugger's saturation bounds (sigmoid below -23 or above 17, tanh beyond 9.5) are where
float32 rounds the output to its limit; the flat region here is where the derivative is below
1% of its peak (|x| > 6 for the sigmoid, |x| > 3 for tanh): a unit there learns a hundred times
slower, and correct networks, initialised at 1/sqrt(inputs), keep their pre-activations within
about 2 (checked on the lab's fixed twins and the mutation bench's originals).
"""

from __future__ import annotations

import math
import weakref
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from torchdoctor.core.finding import Severity
from torchdoctor.observe.detector import Detector
from torchdoctor.observe.events import ModuleCall, Step
from torchdoctor.observe.instruments.grad_norms import GradNorms
from torchdoctor.observe.support import TrainedModels, built_at, first_tensor
from torchdoctor.rules.grad_flow.dead_units import RULE as DEAD
from torchdoctor.rules.grad_flow.saturated_activations import RULE as SATURATED
from torchdoctor.rules.grad_flow.vanishing_gradients import RULE as VANISHING
from torchdoctor.rules.numerics.activation_scale_with_depth import RULE as SCALE

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Observed

#: optimizer steps whose training forward is sampled after the warm-up (steps 1-3)
SAMPLE_STEPS = frozenset({8, 16, 32, 64, 128, 256, 512})
#: Debugger's default: a layer with more than 50% of its units dead (of its inputs saturated)
LAYER_SHARE = 0.5
#: dead units are a warning above this share (info between LAYER_SHARE and it)
DEAD_WARNING = 0.9
#: ... at this many sampled steps in a row
PERSIST = 3
#: samples (batch x positions) a unit needs before "zero over the whole batch" means anything
MIN_SAMPLES = 16
#: where the derivative is below 1% of its peak
FLAT = {nn.Sigmoid: 6.0, nn.Tanh: 3.0}
DYING = (nn.ReLU, nn.ReLU6)
#: vanishing gradients: a weight's gradient (root mean square per element) this many times below
#: the largest of the model's weights', at each warm-up step
VANISHED = 1e-6
#: activation scale: the outputs' variance of the model's Linear/Conv layers, in the order they
#: run at the first training forward, grows by this much from the first layer (a warning) or
#: falls by COLLAPSE (info: PyTorch's default init shrinks a plain ReLU net's by about 6 a layer)
EXPLODE, COLLAPSE = 1e4, 1e-4
MIN_LAYERS = 4
#: ... going the same way from one layer to the next at this share of the layers
STEADY = 0.8


def _units(tensor: torch.Tensor) -> torch.Tensor | None:
    """The tensor as (samples, units): dim 1 is the unit (a feature, a channel); None for a
    batch too small to judge."""
    if tensor.dim() < 2 or not tensor.is_floating_point() or tensor.shape[1] < 2:
        return None
    flat = tensor.detach().movedim(1, -1).reshape(-1, tensor.shape[1])
    return flat if flat.shape[0] >= MIN_SAMPLES else None


def _inactive_share(module: nn.Module, args: tuple[Any, ...], output: Any) -> float | None:
    """The share of the layer's units dead over this batch (a ReLU), or of its inputs in the flat
    region (a sigmoid, tanh); None when it cannot be told."""
    if isinstance(module, DYING):
        units = _units(output) if isinstance(output, torch.Tensor) else None
        if units is None:
            return None
        return float((units > 0).any(0).logical_not().float().mean())
    bound = FLAT.get(type(module))
    x = args[0] if args and isinstance(args[0], torch.Tensor) else None
    units = _units(x) if x is not None else None
    if units is None or bound is None:
        return None
    return float((units.abs() > bound).float().mean())


class _Layer:
    """What the samples of one activation layer (its n-th call in a forward) showed."""

    def __init__(self, module: nn.Module) -> None:
        self.module = weakref.ref(module)
        self.shares: list[tuple[int, float]] = []  # (step, share)
        self.reported = False


class InactiveUnits(Detector):
    """TD484 / TD485: most of a layer's units dead or saturated at several sampled steps."""

    ORDER = 382
    rules = (DEAD, SATURATED)

    def __init__(self, ctx: Observed) -> None:
        super().__init__(ctx)
        self._layers: dict[tuple[int, int], _Layer] = {}
        self._calls: dict[int, int] = {}  # module -> calls in this forward
        self._step = 1  # the step whose forward runs now
        self._fresh = False  # a sample was taken in this step's forward
        self._watches: list[Any] = []
        self._models = TrainedModels(ctx)

    def on_module_call(self, event: ModuleCall) -> None:
        module = event.module
        if event.grad_enabled and isinstance(module, nn.Module) and isinstance(module, (*DYING, *FLAT)):
            self._sample(module, event.args, event.output)

    def _sample(self, module: nn.Module, args: tuple[Any, ...], output: Any) -> None:
        if not (module.training and torch.is_grad_enabled()):
            return  # evaluation
        nth = self._calls.get(id(module), 0)
        self._calls[id(module)] = nth + 1
        share = _inactive_share(module, args, output)
        if share is None:
            return
        layer = self._layers.get((id(module), nth))
        if layer is None or layer.module() is not module:
            layer = self._layers[(id(module), nth)] = _Layer(module)
        if not layer.shares or layer.shares[-1][0] != self._step:
            layer.shares.append((self._step, share))
            self._fresh = True

    def on_step_end(self, event: Step) -> None:
        if event.index < self._step - 1:
            return  # another optimizer's step (a GAN's): the first one's count leads
        if not self._fresh and event.index + 1 not in SAMPLE_STEPS:
            self._step = event.index + 1  # nothing sampled, nothing to sample: every other step costs this
            if self._calls:
                self._calls.clear()
            return
        for watch in self._watches:
            watch.remove()
        self._watches.clear()
        self._calls.clear()
        if self._fresh:
            self._fresh = False
            self._judge()
        self._step = event.index + 1
        if self._step in SAMPLE_STEPS and not self.ctx.warmup:
            for model in self._models.of(event.optimizer):
                for module in model.modules():
                    if isinstance(module, (*DYING, *FLAT)):
                        self._watches.append(self.ctx.modules.watch(module, self._watched))

    def _watched(self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], output: Any) -> None:
        self._sample(module, args, output)

    def _judge(self) -> None:
        for layer in self._layers.values():
            module = layer.module()
            last = layer.shares[-PERSIST:]
            if module is None or layer.reported or len(last) < PERSIST or min(s for _, s in last) <= LAYER_SHARE:
                continue
            layer.reported = True
            self._report(module, layer)

    def _severity(self, module: nn.Module, layer: _Layer) -> dict[str, Any]:
        """Dead units: a warning when nearly all are dead; between Debugger's 50% and that, info
        (correct small networks keep training with 60-85% of a layer dead: lab 43 and 48's twins)."""
        if isinstance(module, DYING) and min(s for _, s in layer.shares[-PERSIST:]) <= DEAD_WARNING:
            return {"severity": Severity.INFO}
        return {}

    def _report(self, module: nn.Module, layer: _Layer) -> None:
        dead = isinstance(module, DYING)
        name, kind = self.ctx.modules.name_of(module), f"nn.{type(module).__name__}"
        history = ", ".join(f"step {step}: {share:.0%}" for step, share in layer.shares)
        first_step, first_share = layer.shares[0]
        from_start = first_step == 1 and first_share > LAYER_SHARE
        layer_before = self._layer_before(module)
        cause = self._cause(module, dead, from_start, first_share, layer_before)
        fields = {"share": f"{layer.shares[-1][1]:.0%}", "layer": name, "kind": kind, "history": history, "cause": cause}
        if not dead:
            fields["bound"] = f"{FLAT[type(module)]:g}"
        self.ctx.report(DEAD if dead else SATURATED, at=built_at(self.ctx.modules.live_roots(), module) or True, key=id(module),
                        fields=fields, evidence={"layer": name, "shares": [[s, round(v, 4)] for s, v in layer.shares]},
                        **self._severity(module, layer))

    def _layer_before(self, module: nn.Module) -> tuple[str, nn.Module, torch.Tensor] | None:
        """The Linear/Conv layer just before the activation in its container (a Sequential)."""
        for root in self.ctx.modules.live_roots():
            for parent in root.modules():
                children = list(parent.children())
                if any(child is module for child in children):
                    index = next(i for i, child in enumerate(children) if child is module)
                    for child in reversed(children[:index]):
                        weight = getattr(child, "weight", None)
                        if isinstance(weight, torch.Tensor) and weight.dim() >= 2:
                            return self.ctx.modules.name_of(child), child, weight
                        if isinstance(child, (nn.BatchNorm1d, nn.BatchNorm2d, nn.LayerNorm, nn.GroupNorm)):
                            return None
                    return None
        return None

    def _cause(self, module: nn.Module, dead: bool, from_start: bool, first_share: float,
               before: tuple[str, nn.Module, torch.Tensor] | None) -> str:
        lr = self._learning_rate()
        if not from_start:
            cause = (f"they were {first_share:.0%} at the first step, so training pushed them there: most likely a learning rate "
                     f"too large{lr}")
            bias = getattr(before[1], "bias", None) if before is not None else None
            if dead and before is not None and isinstance(bias, torch.Tensor):
                with torch.no_grad():
                    negative = float((bias.detach() < 0).float().mean())
                cause += f"; {negative:.0%} of the biases of `{before[0]}` before it are now negative"
            return cause
        if before is None:
            return "already at the first step, before any update: the initialisation or the scale of the inputs"
        with torch.no_grad():
            weight = before[2].detach().float()
            fan_in = weight[0].numel()
            std = float(weight.std())
        usual = 1 / math.sqrt(3 * fan_in)
        return (f"already at the first step, before any update: the weights of `{before[0]}` before it have a standard deviation "
                f"of {std:.3g} ({std / usual:.3g} times PyTorch's default 1/sqrt(3 * {fan_in}) = {usual:.3g}), or its inputs are "
                "not normalised")

    def _learning_rate(self) -> str:
        for optimizer in list(self.ctx.optimizers.known):
            groups = getattr(optimizer, "param_groups", None)
            if groups and isinstance(groups[0].get("lr"), (int, float)):
                return f" (this {type(optimizer).__name__}'s lr is {groups[0]['lr']:g})"
        return ""


class VanishingGradients(Detector):
    """TD486: a layer's gradient orders of magnitude below the other layers' at every warm-up step."""

    ORDER = 392
    rules = (VANISHING,)

    def __init__(self, ctx: Observed) -> None:
        super().__init__(ctx)
        self._seen: dict[int, list[tuple[float, list[str], dict[str, float]]]] = {}
        self._done: set[int] = set()

    def on_step(self, event: Step) -> None:
        key = id(event.optimizer)
        if not self.ctx.warmup or key in self._done or event.closure:
            return
        measured = self.ctx.instrument(GradNorms).at_step(event.optimizer, event.index)
        if measured is None:
            return
        params, norms = measured
        weights = [(i, p) for i, p in enumerate(params) if p.dim() >= 2 and p.numel() > 1]
        if len(weights) < MIN_LAYERS:
            return
        values = norms.tolist()
        rms = {self.ctx.modules.param_name(p) or f"parameter {tuple(p.shape)}": values[i] / math.sqrt(p.numel()) for i, p in weights}
        if not all(math.isfinite(v) for v in rms.values()):
            self._done.add(key)
            return
        largest = max(rms.values())
        vanished = [name for name, value in rms.items() if 0 < value < VANISHED * largest]
        seen = self._seen.setdefault(key, [])
        seen.append((largest, vanished, rms))
        if len(seen) < 3:
            return
        self._done.add(key)
        common = [name for name in seen[0][1] if all(name in later for _, later, _ in seen[1:])]
        if common:
            self._report(event, common, seen[-1][0], seen[-1][2])

    def _report(self, event: Step, names: list[str], largest: float, rms: dict[str, float]) -> None:
        first = names[0]
        owner = self._owner(first)
        shown = ", ".join(f"`{name}` {rms[name]:.2g}" for name in names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        at = built_at(self.ctx.modules.live_roots(), owner) if owner is not None else None
        self.ctx.report(VANISHING, at=at or True, key=id(event.optimizer),
                        fields={"count": len(names), "layers": shown, "largest": f"{largest:.2g}",
                                "ratio": f"{min(rms[n] for n in names) / largest:.1e}", "steps": event.index},
                        evidence={"rms": {name: float(f"{value:.4g}") for name, value in rms.items()}})

    def _owner(self, param_name: str) -> nn.Module | None:
        module_name = param_name.rpartition(".")[0]
        for root in self.ctx.modules.live_roots():
            try:
                return root.get_submodule(module_name)
            except AttributeError:
                continue
        return None


class ActivationScale(Detector):
    """TD487: the output variance of the Linear/Conv layers at the first training forward
    grows (warning) or falls (info) by orders of magnitude with depth."""

    ORDER = 395
    rules = (SCALE,)

    def __init__(self, ctx: Observed) -> None:
        super().__init__(ctx)
        self._layers: list[tuple[nn.Module, float]] = []
        self._closed = False

    def on_module_call(self, event: ModuleCall) -> None:
        if self._closed:
            return
        if event.root and self._layers:
            self._closed = True  # the first training forward is over: judge it
            self._judge()
            return
        module = event.module
        if not (event.grad_enabled and module.training and isinstance(module, (nn.Linear, nn.Conv1d, nn.Conv2d, nn.Conv3d))):
            return
        output = first_tensor(event.output)
        units = _units(output) if output is not None else None
        if units is None or any(m is module for m, _ in self._layers):
            return
        # the signal: each unit's variance over the samples (a bias is no signal), averaged
        self._layers.append((module, float(units.float().var(0).mean())))

    def on_step(self, event: Step) -> None:
        if not self._closed and self._layers:
            self._closed = True
            self._judge()

    def _judge(self) -> None:
        layers = self._layers
        if len(layers) < MIN_LAYERS or not all(math.isfinite(v) and v > 0 for _, v in layers):
            return
        base = layers[0][1]
        ratios = [v / base for _, v in layers]
        # the growth (or fall) must hold over the depth, layer after layer: normalisation layers
        # (a ResNet's) bring the scale back at each block, which is no trend
        top = max(range(len(ratios)), key=ratios.__getitem__)
        low = min(range(len(ratios)), key=ratios.__getitem__)
        if ratios[top] >= EXPLODE and top >= 2 and _steady(ratios[: top + 1], rising=True):
            index, how, severity = top, "grows", None
        elif ratios[low] <= COLLAPSE and low >= 2 and _steady(ratios[: low + 1], rising=False):
            index, how, severity = low, "falls", Severity.INFO
        else:
            return
        profile = ", ".join(f"`{self.ctx.modules.name_of(m)}` {v:.3g}" for m, v in layers[: index + 1][-6:])
        module = layers[index][0]
        at = built_at(self.ctx.modules.live_roots(), layers[0][0]) or built_at(self.ctx.modules.live_roots(), module)
        own: dict[str, Any] = {"severity": severity} if severity else {}
        self.ctx.report(SCALE, at=at or True, fields={"how": how, "ratio": f"{ratios[index]:.1e}", "layers": index + 1,
                                                      "first": self.ctx.modules.name_of(layers[0][0]),
                                                      "last": self.ctx.modules.name_of(module), "profile": profile},
                        evidence={"variance": [float(f"{v:.4g}") for _, v in layers]}, **own)


def _steady(ratios: list[float], rising: bool) -> bool:
    """Whether the variance goes the one way at STEADY of the layers up to the extreme one."""
    steps = [b > a if rising else b < a for a, b in zip(ratios, ratios[1:])]
    return bool(steps) and sum(steps) >= STEADY * len(steps)
