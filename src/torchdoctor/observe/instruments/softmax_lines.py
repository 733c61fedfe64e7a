"""Where the softmax, log-softmax and sigmoid of a step were called: a trace watcher that the
loss-input and batch-of-one detectors share, to point at the line that made a loss's input."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

from torch import nn

from torchdoctor.core.locate import is_user_file
from torchdoctor.observe.events import Location


def softmax_dim(node: Any) -> int | None:
    """The `dim` a softmax / log-softmax node normalised (None when it kept none)."""
    dim = getattr(node, "_saved_dim", None)
    if not isinstance(dim, int):
        return None
    return dim - 2**64 if dim >= 2**63 else dim  # saved as an unsigned 64-bit integer


@dataclass
class Locator:
    """Trace watcher: the user line of every softmax/log-softmax/sigmoid of one step, by node."""

    functions: frozenset[str] = frozenset({"softmax", "log_softmax", "sigmoid"})
    lines: dict[int, tuple[Any, Location, nn.Module | None]] = field(default_factory=dict)
    active: bool = True

    def seen(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any, location: Location | None) -> None:
        node = getattr(result, "grad_fn", None)
        if node is not None and location is not None:
            self.lines[id(node)] = (node, location, _activation_layer())

    def done(self) -> None:
        self.active = False

    def place_of(self, node: Any) -> tuple[Location, nn.Module | None] | None:
        """Where the op that made `node` was called, and the nn.Softmax/Sigmoid layer if one did."""
        entry = self.lines.get(id(node))
        return (entry[1], entry[2]) if entry is not None and entry[0] is node else None


ACTIVATION_LAYERS = (nn.Softmax, nn.LogSoftmax, nn.Sigmoid, nn.Softmax2d)


def _activation_layer() -> nn.Module | None:
    """The nn.Softmax / nn.Sigmoid module running the current call, if one is (a model's last
    layer): its line in the user's code is only the model's call."""
    frame: FrameType | None = sys._getframe(2)
    while frame is not None and not is_user_file(frame.f_code.co_filename):
        candidate = frame.f_locals.get("self")
        if isinstance(candidate, ACTIVATION_LAYERS):
            return candidate
        frame = frame.f_back
    return None
