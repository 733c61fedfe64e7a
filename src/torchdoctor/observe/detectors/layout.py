"""TD302 at run time: a sequence layer that reads the batch dimension as time (warm-up only).

`nn.LSTM`/`nn.GRU`/`nn.RNN`, `nn.MultiheadAttention` and the `nn.Transformer*` layers expect
(time, batch, features) unless built with `batch_first=True`. Fed a (batch, time, features)
batch, they run without an error and mix the samples of the batch into one sequence. The
evidence is the DataLoader's `batch_size`: the layer's input has it as dim 0 and something
else (not 1) as dim 1, where the batch should be.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import nn

from torchdoctor.introspect.source import child_built_at
from torchdoctor.observe.detector import Detector
from torchdoctor.observe.events import Batch, ModuleCall
from torchdoctor.rules.data.batch_samples_mixed import RULE as BATCH_MIXED

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Observed

#: layers with a `batch_first` flag that defaults to False
SEQUENCE_LAYERS = (nn.RNNBase, nn.MultiheadAttention, nn.TransformerEncoderLayer, nn.TransformerDecoderLayer)


class SequenceFirstLayout(Detector):
    """TD302: a `batch_first=False` sequence layer fed a batch whose dim 0 is the batch size."""

    ORDER = 270
    rules = (BATCH_MIXED,)

    def __init__(self, ctx: Observed) -> None:
        super().__init__(ctx)
        self._batch_size: int | None = None
        self._reported = False

    def on_batch(self, event: Batch) -> None:
        if self.ctx.warmup:
            size = getattr(event.loader, "batch_size", None)
            self._batch_size = size if isinstance(size, int) and size > 1 else None

    def on_module_call(self, event: ModuleCall) -> None:
        module = event.module
        if self._reported or self._batch_size is None or not isinstance(module, SEQUENCE_LAYERS):
            return
        if _batch_first(module):
            return
        x = event.args[0] if event.args else event.kwargs.get("input", event.kwargs.get("src", event.kwargs.get("query")))
        if not isinstance(x, torch.Tensor) or x.dim() != 3:
            return
        batch = self._batch_size
        if x.shape[0] != batch or x.shape[1] in (batch, 1):
            return
        self._reported = True
        name, kind = self._described(module)
        self.ctx.report(BATCH_MIXED, at=self._built_at(module) or True, key=id(module), variant="sequence-not-batch-first",
                        fields={"kind": kind, "layer": name, "shape": tuple(x.shape), "batch": batch, "dim1": x.shape[1]},
                        evidence={"input_shape": list(x.shape), "batch_size": batch, "layer": name})

    def _built_at(self, module: nn.Module) -> tuple[str, int] | None:
        """The line that built the layer (`self.rnn = nn.LSTM(...)` in its parent's `__init__`:
        the line to change); a Transformer layer's attention: the layer's."""
        for root in self.ctx.modules.live_roots():
            for parent in root.modules():
                for child in parent.children():
                    if child is module or (isinstance(module, nn.MultiheadAttention) and module in (
                            getattr(child, "self_attn", None), getattr(child, "multihead_attn", None))):
                        return child_built_at(parent, child)
        return None

    def _described(self, module: nn.Module) -> tuple[str, str]:
        """The layer's name and class; the attention inside a Transformer layer is named by that
        layer, which is what the user built (and where `batch_first` is given)."""
        name = self.ctx.modules.name_of(module)
        owner, dot, attribute = name.rpartition(".")
        if isinstance(module, nn.MultiheadAttention) and dot and attribute in ("self_attn", "multihead_attn"):
            for root in self.ctx.modules.live_roots():
                try:
                    layer = root.get_submodule(owner)
                except AttributeError:
                    continue
                if getattr(layer, attribute, None) is module:
                    return owner, type(layer).__name__
        return name, type(module).__name__


def _batch_first(module: nn.Module) -> bool:
    """The layer's `batch_first` (a Transformer layer keeps it on its attention)."""
    flag = getattr(module, "batch_first", None)
    if flag is None:
        flag = getattr(getattr(module, "self_attn", None), "batch_first", True)
    return bool(flag)
