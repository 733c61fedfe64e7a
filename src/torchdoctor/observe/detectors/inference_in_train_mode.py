"""TD340: a model whose weights were loaded, used for inference while still in train mode.

A run that never calls backward() does not train: a module whose weights `load_state_dict`
loaded and that is then called with dropout or batch-norm layers in train mode is predicting,
evaluating or extracting features in the wrong mode. The verdict waits for the end of the run
(a backward() later would make it a training script, TD133's ground), and is dropped when the
user switched the model (or a module around it or in it) with `train()`/`eval()`: Monte Carlo
dropout and batch-norm recalibration say `model.train()`.

Cost: one listener on `load_state_dict` (a few calls per run), and a forward watch on each
loaded module until its first call or the first backward(), whichever comes first.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from torch import nn
from torch.nn.modules.batchnorm import _BatchNorm
from torch.nn.modules.dropout import _DropoutNd

from torchdoctor.core.locate import caller_in_user_code
from torchdoctor.observe.detector import Detector
from torchdoctor.observe.events import Backward, Location
from torchdoctor.observe.instruments.compiled import traced
from torchdoctor.observe.instruments.loading import StateLoad, StateLoads
from torchdoctor.observe.instruments.modes import ModeSwitches
from torchdoctor.observe.outcome import Outcome
from torchdoctor.observe.support import place, unwrapped
from torchdoctor.rules.mode.inference_in_train_mode import RULE

if TYPE_CHECKING:
    from torchdoctor.observe.instruments.modules import Watch
    from torchdoctor.observe.observed import Observed

#: layers named in the message, at most
NAMED = 3


@dataclass
class Loaded:
    """A module whose weights were loaded, and its first call in train mode, if any."""

    module: weakref.ref[nn.Module]
    loaded_at: Location | None
    watch: Watch | None = None
    called_at: Location | None = None
    dropout: tuple[str, ...] = ()
    batchnorm: tuple[str, ...] = ()


def train_mode_layers(module: nn.Module) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The dropout layers (p > 0) and the batch-norm layers that keep running statistics which
    are in train mode now, by name and class (`body.3 (Dropout)`): those whose output train mode
    changes. A batch-norm without running statistics uses the batch's in both modes."""
    dropout: list[str] = []
    batchnorm: list[str] = []
    for name, layer in module.named_modules():
        if not layer.training:
            continue
        if isinstance(layer, _DropoutNd) and layer.p > 0:
            dropout.append(f"{name} ({type(layer).__name__})" if name else type(layer).__name__)
        elif isinstance(layer, _BatchNorm) and layer.track_running_stats:
            batchnorm.append(f"{name} ({type(layer).__name__})" if name else type(layer).__name__)
    return tuple(dropout), tuple(batchnorm)


class InferenceInTrainMode(Detector):
    """TD340: see the module's docstring."""

    ORDER = 235
    rules = (RULE,)

    def __init__(self, ctx: Observed) -> None:
        super().__init__(ctx)
        self._loaded: dict[int, Loaded] = {}
        self._switches: ModeSwitches | None = None

    def install(self) -> None:
        self.ctx.instrument(StateLoads).listen(self._on_load)
        self._switches = self.ctx.instrument(ModeSwitches)

    def _on_load(self, load: StateLoad) -> None:
        if self.ctx.backward.calls or id(load.module) in self._loaded:
            return
        entry = Loaded(weakref.ref(load.module), caller_in_user_code())
        entry.watch = self.ctx.modules.watch(load.module, self._forward)
        self._loaded[id(load.module)] = entry

    def _forward(self, module: nn.Module, _args: Any, _kwargs: Any, _output: Any) -> None:
        if traced():
            return
        entry = self._loaded.get(id(module))
        if entry is None or entry.module() is not module:
            return
        self._unwatch(entry)  # the first call decides: a later one in another mode needs a switch
        entry.dropout, entry.batchnorm = train_mode_layers(module)
        if entry.dropout or entry.batchnorm:
            entry.called_at = caller_in_user_code()

    def on_backward(self, event: Backward) -> None:
        for entry in self._loaded.values():
            self._unwatch(entry)

    def on_finish(self, outcome: Outcome) -> None:
        for entry in self._loaded.values():
            self._unwatch(entry)
        if not outcome.completed or self.ctx.backward.calls or self.ctx.steps:
            return
        for key, entry in self._loaded.items():
            module = entry.module()
            if module is None or entry.called_at is None or self._switched(module):
                continue
            self._report(key, module, entry)

    def _switched(self, module: nn.Module) -> bool:
        """The user switched this module, one around it or one in it: the mode is chosen."""
        switched = list(self._switches.last.keys()) if self._switches is not None else []
        inside = {id(m) for m in module.modules()}
        return any(id(other) in inside or any(m is module for m in other.modules()) for other in switched)

    def _report(self, key: int, module: nn.Module, entry: Loaded) -> None:
        fields = {"model": type(unwrapped(module)).__name__, "loaded": place(entry.loaded_at) or "its load_state_dict call"}
        if entry.dropout:
            fields["dropout"] = _names(entry.dropout)
        if entry.batchnorm:
            fields["batchnorm"] = _names(entry.batchnorm)
        variant = None if entry.dropout and entry.batchnorm else "dropout" if entry.dropout else "batchnorm"
        self.ctx.report(RULE, at=entry.called_at, key=key, fields=fields, variant=variant,
                        evidence={"dropout": list(entry.dropout), "batchnorm": list(entry.batchnorm)})

    def _unwatch(self, entry: Loaded) -> None:
        if entry.watch is not None:
            entry.watch.remove()
            entry.watch = None


def _names(layers: tuple[str, ...]) -> str:
    """`body.3 (Dropout)`, or `a (Dropout), b (Dropout), c (Dropout) and 5 more`."""
    shown = ", ".join(layers[:NAMED])
    return shown + (f" and {len(layers) - NAMED} more" if len(layers) > NAMED else "")
