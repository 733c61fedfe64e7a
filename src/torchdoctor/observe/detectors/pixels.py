"""TD450: raw 0..255 pixel values reaching the first layer of a model (warm-up only)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import nn

from torchdoctor.observe.detector import Detector
from torchdoctor.observe.events import ModuleCall
from torchdoctor.rules.data.unnormalized_image_input import RULE as RAW_PIXELS

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Observed


class RawPixels(Detector):
    """TD450: the first layer with weights of a model call (a convolution, or a linear layer
    over image-sized vectors) gets whole numbers in 0..255 in a float tensor: images that were
    converted to float but never scaled (warm-up steps only)."""

    ORDER = 260
    rules = (RAW_PIXELS,)
    #: model calls whose first layer input is looked at (each look reads values back)
    LOOKS = 3
    #: the smallest maximum that counts as raw pixels (masks, small class maps are not)
    MIN_HIGH = 128
    #: a linear layer counts only over image-sized inputs with many distinct values (counts and
    #: integer-coded tabular features are not pixels)
    MIN_FEATURES = 256
    MIN_DISTINCT = 32

    def __init__(self, ctx: Observed) -> None:
        super().__init__(ctx)
        self._looked = 0
        self._seen_layer = False
        self._raw: tuple[str, int, int] | None = None

    def on_module_call(self, event: ModuleCall) -> None:
        if event.root:
            raw, self._raw, self._seen_layer = self._raw, None, False
            if raw is not None:
                name, low, high = raw
                self.ctx.report(RAW_PIXELS, key=name, fields={"layer": name, "low": low, "high": high},
                                evidence={"min": low, "max": high})
            return
        module = event.module
        if self._seen_layer or self._looked >= self.LOOKS or not isinstance(module, (nn.Conv2d, nn.Conv3d, nn.Linear)):
            return
        self._seen_layer = True
        x = event.args[0] if event.args else None
        if not isinstance(x, torch.Tensor) or not x.is_floating_point() or x.numel() < 256:
            return
        linear = isinstance(module, nn.Linear)
        if isinstance(module, nn.Linear) and module.in_features < self.MIN_FEATURES:
            return
        self._looked += 1
        if self._raw_pixels(x.detach(), linear):
            self._raw = (self.ctx.modules.name_of(module), int(x.min()), int(x.max()))

    def _raw_pixels(self, x: torch.Tensor, linear: bool) -> bool:
        with torch.no_grad():
            low, high = (float(v) for v in torch.aminmax(x))
            if not (low >= 0 and self.MIN_HIGH <= high <= 255) or not torch.equal(x, torch.round(x)):
                return False
            return not linear or torch.unique(x).numel() >= self.MIN_DISTINCT
