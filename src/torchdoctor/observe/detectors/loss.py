"""What a loss function receives: probabilities (or sigmoid outputs) where logits or
log-probabilities are expected, a softmax over the batch, shapes that broadcast.

The producer of the loss's input is read from its autograd node (`SoftmaxBackward0`,
`SigmoidBackward0`, ... with the softmax's `dim`), through view-like nodes only: cheap enough
for every call, and exact. The line that applied the softmax is found by tracing one more
step; if the run ends first, the finding points at the loss call instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from torchdoctor.core.locate import caller_in_user_code, display_path
from torchdoctor.core.rule import Rule
from torchdoctor.observe.detector import Detector
from torchdoctor.observe.events import Location, LossCall
from torchdoctor.observe.instruments.softmax_lines import Locator, softmax_dim
from torchdoctor.observe.outcome import Outcome
from torchdoctor.rules.loss.loss_target_broadcast import RULE as BROADCAST
from torchdoctor.rules.loss.probabilities_into_kl_div import RULE as KL_DIV
from torchdoctor.rules.loss.probabilities_into_kl_div import WRONG_INPUT, WRONG_TARGET
from torchdoctor.rules.loss.softmax_over_batch_dim import RULE as BATCH_DIM
from torchdoctor.rules.loss.wrong_inputs import WRONG_PRODUCERS

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Observed

#: nodes that move or relabel values without changing them (probabilities stay probabilities)
VIEWS = frozenset(
    {
        "ViewBackward0", "UnsafeViewBackward0", "ReshapeAliasBackward0", "AliasBackward0", "TransposeBackward0",
        "TBackward0", "PermuteBackward0", "SqueezeBackward0", "SqueezeBackward1", "SqueezeBackward2",
        "SqueezeBackward3", "UnsqueezeBackward0", "CloneBackward0", "ToCopyBackward0", "ExpandBackward0",
        "SliceBackward0", "SelectBackward0", "IndexBackward0", "CatBackward0", "StackBackward0", "SplitBackward0",
    }
)
#: the subset that also keeps every dimension where it was (so a softmax's `dim` still means the same)
SAME_LAYOUT = frozenset({"CloneBackward0", "ToCopyBackward0", "AliasBackward0"})
ELEMENTWISE = {"mse_loss": "MSELoss", "l1_loss": "L1Loss", "smooth_l1_loss": "SmoothL1Loss", "huber_loss": "HuberLoss"}
#: how far up the graph the producer is looked for
DEPTH = 8


@dataclass(frozen=True)
class Producer:
    node: Any
    kind: str  # "softmax", "log_softmax", "sigmoid"
    dim: int | None
    same_layout: bool


def producer(tensor: torch.Tensor) -> Producer | None:
    """The softmax / log-softmax / sigmoid that produced `tensor`, through view-like nodes."""
    node = tensor.grad_fn
    same_layout = True
    for _ in range(DEPTH):
        if node is None:
            return None
        name = type(node).__name__
        if name == "SoftmaxBackward0":
            return Producer(node, "softmax", softmax_dim(node), same_layout)
        if name == "LogSoftmaxBackward0":
            return Producer(node, "log_softmax", softmax_dim(node), same_layout)
        if name == "SigmoidBackward0":
            return Producer(node, "sigmoid", None, same_layout)
        if name not in VIEWS:
            return None
        same_layout = same_layout and name in SAME_LAYOUT
        node = node.next_functions[0][0] if node.next_functions else None
    return None


def compiled(tensor: torch.Tensor) -> bool:
    """Made by a torch.compile'd region (its whole forward is one autograd node), through views."""
    node = tensor.grad_fn
    for _ in range(DEPTH):
        if node is None:
            return False
        name = type(node).__name__
        if name == "CompiledFunctionBackward":
            return True
        if name not in VIEWS:
            return False
        node = node.next_functions[0][0] if node.next_functions else None
    return False


@dataclass
class Pending:
    rule: Rule
    loss_line: Location | None
    fields: dict[str, Any]


class LossInputs(Detector):
    ORDER = 70
    rules = (*WRONG_PRODUCERS.values(), BATCH_DIM, BROADCAST, KL_DIV)

    def __init__(self, ctx: Observed) -> None:
        super().__init__(ctx)
        self._pending: dict[str, Pending] = {}
        self._done: set[str] = set()
        self._locator: Locator | None = None
        self._broadcasts: set[tuple[Any, ...]] = set()
        self._replayed: set[str] = set()  # loss functions whose compiled input was replayed

    def on_loss(self, event: LossCall) -> None:
        if event.function in ELEMENTWISE:
            self._broadcast(event)
            return
        if event.function == "kl_div":
            self._kl_target(event)
        if event.input.grad_fn is None:
            return
        made, locator = producer(event.input), None
        if made is None and compiled(event.input) and event.function not in self._replayed:
            made, locator = self._eager_producer(event)
        if made is None:
            return
        for rule, fields in self._verdicts(event, made):
            self._found(rule, fields, made, locator)

    def _eager_producer(self, event: LossCall) -> tuple[Producer | None, Locator]:
        """The input comes out of a compiled model, as one compiled node: replay that model's
        forward eagerly (once per loss function), where the softmax is a node again, and its line
        is seen as it runs."""
        self._replayed.add(event.function)
        locator = Locator()
        replayed = self.ctx.replayed(event.input, [locator])
        return (producer(replayed) if replayed is not None else None), locator

    def _verdicts(self, event: LossCall, made: Producer) -> list[tuple[Rule, dict[str, Any]]]:
        found: list[tuple[Rule, dict[str, Any]]] = []
        function = event.function
        wrong = WRONG_PRODUCERS.get((function, made.kind))
        if wrong is not None:
            found.append((wrong, {}))
        elif function == "kl_div" and made.kind == "softmax":
            found.append((KL_DIV, {"wrong": WRONG_INPUT}))
        batched = event.input.dim() >= 2
        if (
            function in ("cross_entropy", "nll_loss")
            and made.kind in ("softmax", "log_softmax")
            and made.dim is not None
            and made.same_layout
            and batched
            and made.dim % event.input.dim() == 0
        ):
            found.append((BATCH_DIM, {"dim": made.dim, "size": event.input.shape[0]}))
        return found

    def _kl_target(self, event: LossCall) -> None:
        """A log-softmax as KLDivLoss's target, without `log_target=True` (a target made with
        autograd on: under no_grad it has no node to read, and the NaN it causes is TD145's)."""
        target = event.target
        log_target = event.kwargs.get("log_target", event.args[5] if len(event.args) > 5 else False)
        if not isinstance(target, torch.Tensor) or target.grad_fn is None or log_target is not False:
            return
        made = producer(target)
        if made is not None and made.kind == "log_softmax":
            self._found(KL_DIV, {"wrong": WRONG_TARGET}, made)

    def _found(self, rule: Rule, fields: dict[str, Any], made: Producer, replay: Locator | None = None) -> None:
        key = f"{rule.code}:{made.kind}"
        if key in self._done:
            return
        locator = replay or self._locator
        place = locator.place_of(made.node) if locator is not None else None
        if place is not None:
            self._report(rule, place[0], fields, made, loss_line=caller_in_user_code(), layer=place[1])
            return
        if key not in self._pending:
            self._pending[key] = Pending(rule, caller_in_user_code(), {**fields, "made": made.kind})
            if self._locator is None:
                self._locator = Locator()
                self.ctx.trace_next_step(self._locator)
        elif locator is not None and not locator.active:
            self._flush()

    def _report(
        self, rule: Rule, line: Location | None, fields: dict[str, Any], made: Producer | None, loss_line: Location | None, layer: nn.Module | None = None
    ) -> None:
        kind = made.kind if made is not None else fields.get("made", "softmax")
        where = ""
        if loss_line and line and loss_line != line:
            place = f"line {loss_line[1]}" if loss_line[0] == line[0] else f"{display_path(loss_line[0])}:{loss_line[1]}"
            where = f" (the loss is computed at {place})"
        if layer is not None:
            source = f"the model's {type(layer).__name__} layer `{self.ctx.modules.name_of(layer)}` (the model is called on this line){where}"
        else:
            source = f"{kind} on this line{where}" if line else kind
        template = {k: v for k, v in fields.items() if k != "made"}
        self.ctx.report(rule, at=line, key="loss", fields={**_source(rule, source), **template})
        self._done.add(f"{rule.code}:{kind}")
        self._pending.pop(f"{rule.code}:{kind}", None)

    def _flush(self) -> None:
        """No traced step placed the softmax: report at the loss call instead."""
        for pending in list(self._pending.values()):
            kind = pending.fields.get("made", "softmax")
            fields = {k: v for k, v in pending.fields.items() if k != "made"}
            self.ctx.report(pending.rule, at=pending.loss_line, key="loss",
                            fields={**_source(pending.rule, f"{kind} (its output is this loss's input)"), **fields})
            self._done.add(f"{pending.rule.code}:{kind}")
        self._pending.clear()

    def on_finish(self, outcome: Outcome) -> None:
        self._flush()

    def _broadcast(self, event: LossCall) -> None:
        target = event.target
        if not isinstance(target, torch.Tensor):
            return
        a, b = tuple(event.input.shape), tuple(target.shape)
        if a == b or (event.function, a, b) in self._broadcasts:
            return
        self._broadcasts.add((event.function, a, b))
        try:
            both = tuple(torch.broadcast_shapes(a, b))
        except RuntimeError:
            return  # the loss itself will raise
        pairs, largest = _numel(both), max(_numel(a), _numel(b))
        if pairs > largest:  # both sides were expanded: every prediction meets every target
            self.ctx.report(
                BROADCAST,
                fields={"loss": ELEMENTWISE[event.function], "input_shape": list(a), "target_shape": list(b),
                        "pairs": pairs, "expected": largest},
            )


def _source(rule: Rule, source: str) -> dict[str, str]:
    """`source` (where the wrong input came from) for the rules whose message names it (TD107's does not)."""
    return {"source": source} if "source" in rule.placeholders else {}


def _numel(shape: tuple[int, ...]) -> int:
    total = 1
    for size in shape:
        total *= size
    return total
