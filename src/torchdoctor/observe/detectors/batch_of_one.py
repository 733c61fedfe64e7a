"""TD107 for a softmax over a batch of one: `softmax(scores, dim=0)` on a (1, classes) tensor.

Every probability is then exactly 1 (a log-softmax gives 0), whatever the scores, so nothing
reaches the layers below it: a policy network fed one state at a time samples its actions at
random for ever, and no loss function is called to show what the probabilities were. The
graph of the first backward() calls (warm-up only) is searched for such a softmax node; the
line that made it is found by tracing the next step (the `Locator` of the loss-input checks).
The softmax must be seen at two backward() calls (a sequence of length one in a seq-first
batch is a one-off); when the second is not traced, the finding is at the backward() line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from torchdoctor.core.locate import caller_in_user_code
from torchdoctor.introspect.graph import graph_nodes
from torchdoctor.observe.detector import Detector
from torchdoctor.observe.events import Backward, Location
from torchdoctor.observe.instruments.softmax_lines import Locator, softmax_dim
from torchdoctor.observe.support import backward_roots
from torchdoctor.rules.loss.softmax_over_batch_dim import RULE as BATCH_DIM

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Observed

#: graph nodes visited at most per backward() call
MAX_NODES = 20_000
_SOFTMAXES = {"SoftmaxBackward0": "softmax", "LogSoftmaxBackward0": "log_softmax"}


def softmax_over_one(node: Any) -> tuple[str, tuple[int, ...]] | None:
    """("softmax" / "log_softmax", the output's shape) when `node` normalised dim 0 of a
    (1, ..., classes) tensor with more than one class: an output that is constant.

    The shape is read from the node's metadata, not from its saved output: unpacking that
    would run saved-tensor hooks (activation checkpointing recomputes its region)."""
    kind = _SOFTMAXES.get(type(node).__name__)
    if kind is None:
        return None
    metadata: Any = getattr(node, "_input_metadata", ())
    shape = tuple(getattr(metadata[0], "shape", ())) if len(metadata) == 1 else ()
    dim = softmax_dim(node)
    if dim is None or len(shape) < 2:
        return None
    if dim % len(shape) != 0 or shape[0] != 1 or shape[-1] < 2:
        return None
    return kind, shape


class SoftmaxOverBatchOfOne(Detector):
    ORDER = 75
    rules = (BATCH_DIM,)

    def __init__(self, ctx: Observed) -> None:
        super().__init__(ctx)
        self._locator: Locator | None = None
        self._done = False

    def on_backward(self, event: Backward) -> None:
        if self._done or not (self.ctx.warmup or self._locator is not None):
            return
        found = next(((node, made) for node in graph_nodes(backward_roots(event.tensors), MAX_NODES)
                      if (made := softmax_over_one(node)) is not None), None)
        if found is None:
            return
        node, (kind, shape) = found
        if self._locator is None:  # seen once: trace the next step, to see it again and learn its line
            self._locator = Locator()
            self.ctx.trace_next_step(self._locator)
            return
        backward = caller_in_user_code()
        place = self._locator.place_of(node)
        self._report(kind, shape, place[0] if place else backward, backward)

    def _report(self, kind: str, shape: tuple[int, ...], at: Location | None, backward: Location | None) -> None:
        self._done = True
        where = f" (backward() at line {backward[1]})" if backward and at and backward[0] == at[0] and backward != at else ""
        self.ctx.report(BATCH_DIM, at=at, key="loss", variant="batch-of-one" if kind == "softmax" else "log-batch-of-one",
                        fields={"kind": kind, "shape": list(shape), "classes": shape[-1], "where": where})
