"""TD450: raw 0..255 pixel values reaching the first convolution of a model (warm-up only)."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from torchdoctor.rules.data.unnormalized_image_input import RULE as RAW_PIXELS
from torchdoctor.run.detector import Detector
from torchdoctor.run.events import ModuleCall


class RawPixels(Detector):
    """TD450: the first convolution of a model call gets integer values in 0..255 in a float
    tensor: images that were converted to float but never scaled (warm-up steps only)."""

    rules = (RAW_PIXELS,)
    #: model calls whose first convolution input is looked at (each read costs a device sync)
    LOOKS = 3
    #: the smallest maximum that counts as raw pixels (a mask of 0/1 or a few classes is not)
    MIN_HIGH = 64

    def __init__(self, ctx: Any) -> None:
        super().__init__(ctx)
        self._looked = 0
        self._seen_conv = False
        self._raw: tuple[str, int, int] | None = None

    def on_module_call(self, event: ModuleCall) -> None:
        if event.root:
            raw, self._raw, self._seen_conv = self._raw, None, False
            if raw is not None:
                name, low, high = raw
                self.ctx.report(RAW_PIXELS, key=name, layer=name, low=low, high=high, evidence={"min": low, "max": high})
            return
        if self._seen_conv or self._looked >= self.LOOKS or not isinstance(event.module, (nn.Conv2d, nn.Conv3d)):
            return
        self._seen_conv = True
        x = event.args[0] if event.args else None
        if not isinstance(x, torch.Tensor) or not x.is_floating_point() or x.numel() < 256:
            return
        self._looked += 1
        with torch.no_grad():
            low, high = (float(v) for v in torch.aminmax(x.detach()))
            if not (low >= 0 and self.MIN_HIGH < high <= 255):
                return
            if not bool(torch.equal(x.detach(), torch.round(x.detach()))):
                return
        self._raw = (self.ctx.modules.name_of(event.module), int(low), int(high))
