"""Loss sanity: probabilities fed to a logits loss, broadcasting, class targets, and the
first loss against ln(C) (TD101-TD106, TD303).

It reads the loss calls the tracer recorded (the function, its input and target), so it
works for `nn.CrossEntropyLoss()`, `F.cross_entropy` and hand-written losses that call them.
Where the input came from is read from the autograd graph (`SoftmaxBackward0`,
`SigmoidBackward0`), seen through reshapes.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from torchdoctor.core.finding import Finding
from torchdoctor.health.context import CLASS_LOSSES, CheckContext, TrainPass
from torchdoctor.health.loss_targets import class_count, target_problem
from torchdoctor.health.outcome import Outcome, shape
from torchdoctor.health.tracer import LossCall, Producer, producer_of
from torchdoctor.introspect.sites import Site, definition_site, where
from torchdoctor.introspect.tensors import tensors_in
from torchdoctor.rules.dtype.class_target_not_integer import RULE as TARGET_NOT_INTEGER
from torchdoctor.rules.loss.class_target_out_of_range import RULE as TARGET_OUT_OF_RANGE
from torchdoctor.rules.loss.initial_loss_far_from_chance import RULE as FAR_FROM_CHANCE
from torchdoctor.rules.loss.loss_target_broadcast import RULE as BROADCAST
from torchdoctor.rules.loss.wrong_inputs import WRONG_PRODUCERS

NAME = "loss"
ORDER = 80  # its place in the report (core/plugins.py)
TITLE = "the loss gets what it expects"
#: what the check does, in its row of docs/check.md's table (`python -m torchdoctor.dev generate`)
DOES = (
    "softmax/sigmoid output fed to a loss that expects logits (read from the autograd graph: "
    "`SoftmaxBackward0`, `SigmoidBackward0`), `(N,1)` vs `(N,)` broadcasting, class targets out of range "
    "or not integer, first loss against ln(C)"
)
RULES = (
    *(rule.code for rule in WRONG_PRODUCERS.values()), BROADCAST.code,
    TARGET_OUT_OF_RANGE.code, TARGET_NOT_INTEGER.code, FAR_FROM_CHANCE.code,
)
ELEMENTWISE = ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits")
PRETTY = {
    "cross_entropy": "CrossEntropyLoss", "nll_loss": "NLLLoss", "binary_cross_entropy_with_logits": "BCEWithLogitsLoss",
    "binary_cross_entropy": "BCELoss", "mse_loss": "MSELoss", "l1_loss": "L1Loss", "smooth_l1_loss": "SmoothL1Loss",
    "huber_loss": "HuberLoss",
}


def run(ctx: CheckContext) -> Outcome:
    tp = ctx.train_pass()
    if tp.forward_failure is not None:
        return Outcome(skipped="the forward pass failed")
    if not tp.loss_is_users:
        return Outcome(skipped="no loss_fn given")
    calls = [c for c in tp.records.losses if isinstance(c.input, torch.Tensor)]
    findings: list[Finding] = []
    for call in calls:
        findings += _probabilities(ctx, tp, call)
        if call.name in CLASS_LOSSES:
            findings += _class_targets(ctx, call)
        if call.name in ELEMENTWISE:
            findings += _broadcast(ctx, call)
    if not findings and tp.loss is not None:
        findings += _far_from_chance(ctx, calls, tp)
    if not calls:
        return Outcome(findings, detail=f"{tp.loss_label}: a custom loss (no standard loss function call seen)")
    return Outcome(findings, detail=_what_it_got(ctx, tp, calls))


def _what_it_got(ctx: CheckContext, tp: TrainPass, calls: list[LossCall]) -> str:
    """`CrossEntropyLoss (lab.py:48) gets input (32, 10) float32 and targets (32,) int64 in 0..9`:
    the user's own loss, where they made it, and what it was given; a function of theirs that
    calls a standard loss is named with the loss it calls (`my_loss (lab.py:12) calls
    CrossEntropyLoss on ...`)."""
    own = ctx.subject.loss_fn
    site = ctx.locate.of(own) if isinstance(own, torch.nn.Module) else definition_site(own)
    at = f" ({site.shown})" if site is not None else ""
    said = []
    for call in calls[:2]:
        got = f"input {shape(call.input)} {_dtype(call.input)} and targets {_target_words(call.target)}"
        if tp.loss_label in (call.name, PRETTY.get(call.name)):
            said.append(f"{tp.loss_label}{at} gets {got}")
        else:
            said.append(f"{tp.loss_label}{at} calls {PRETTY.get(call.name, call.name)} on {got}")
    more = f"; and {len(calls) - 2} more loss call(s)" if len(calls) > 2 else ""
    return "; ".join(said) + more


def _dtype(value: torch.Tensor) -> str:
    return str(value.dtype).replace("torch.", "")


def _target_words(target: Any) -> str:
    """`(32,) int64 in 0..9` for class targets, `(32, 1) float32` otherwise."""
    if not isinstance(target, torch.Tensor):
        return type(target).__name__
    words = f"{shape(target)} {_dtype(target)}"
    if target.numel() and not target.is_floating_point() and not target.is_complex() and target.dtype != torch.bool:
        words += f" in {int(target.min())}..{int(target.max())}"
    return words


def _loss_site(ctx: CheckContext, call: LossCall) -> Site | None:
    return call.site or ctx.locate.best(ctx.locate.of(ctx.subject.loss_fn))


def _source(ctx: CheckContext, producer: Producer) -> tuple[str, Site | None]:
    site = producer.site
    if site is None and producer.module is not None:
        site = ctx.locate.module(producer.module)
        owner = dict(ctx.subject.model.named_modules()).get(producer.module)
        label = f"`{producer.module}` ({type(owner).__name__})" if owner is not None else producer.call
        return f"{producer.kind} in {label}", site
    return (f"{producer.call} at {site.shown}" if site else producer.call), site


def _probabilities(ctx: CheckContext, tp: TrainPass, call: LossCall) -> list[Finding]:
    producer = producer_of(call.input, tp.records)
    if producer is None and call.input.grad_fn is None and call.name in CLASS_LOSSES and _rows_sum_to_one(call.input):
        producer = Producer("softmax", "softmax (its rows sum to 1)", None, None, None)
    if producer is None:
        return []
    rule = WRONG_PRODUCERS.get((call.name, producer.kind))
    if rule is None:
        return []
    source, site = _source(ctx, producer)
    return [rule.finding(**where(ctx.locate.best(site, _loss_site(ctx, call))), fields={"source": source})]


def _rows_sum_to_one(values: torch.Tensor) -> bool:
    if values.dim() < 2 or not values.is_floating_point() or values.numel() == 0:
        return False
    values = values.detach().float()
    in_range = bool(((values >= 0) & (values <= 1)).all())
    return in_range and bool(torch.allclose(values.sum(dim=1), torch.ones(()), atol=1e-3))


def _class_targets(ctx: CheckContext, call: LossCall) -> list[Finding]:
    problem = target_problem(call)
    target, logits = call.target, call.input
    loss = PRETTY[call.name]
    if problem == "dtype":
        return [TARGET_NOT_INTEGER.finding(**where(ctx.data_site(1)),
                                           fields={"loss": loss, "dtype": str(target.dtype).replace("torch.", "")})]
    if problem != "range":
        return []
    classes = class_count(logits)
    ignore = call.kwargs.get("ignore_index", -100)
    bad = target[(target != ignore) & ((target < 0) | (target >= classes))]
    high, low = int(target.max()), int(bad.min())
    site = ctx.data_site(1)
    if low < 0:
        return [TARGET_OUT_OF_RANGE.finding(**where(site), variant="negative-label",
                                            fields={"low": low, "loss": loss, "ignore": ignore, "num_classes": classes,
                                                    "last": classes - 1})]
    return [TARGET_OUT_OF_RANGE.finding(**where(site),
                                        fields={"max_label": high, "num_classes": classes, "last": classes - 1})]


def _broadcast(ctx: CheckContext, call: LossCall) -> list[Finding]:
    target, prediction = call.target, call.input
    if not isinstance(target, torch.Tensor) or target.shape == prediction.shape:
        return []
    try:
        joint = torch.broadcast_shapes(prediction.shape, target.shape)
    except RuntimeError:
        return []  # the loss raises: reported as a loss failure
    pairs, expected = math.prod(joint), max(prediction.numel(), target.numel())
    if pairs <= expected:
        return []
    return [BROADCAST.finding(
        **where(_loss_site(ctx, call)),
        fields={"loss": PRETTY[call.name], "input_shape": shape(prediction), "target_shape": shape(target),
                "pairs": pairs, "expected": expected},
    )]


def _far_from_chance(ctx: CheckContext, calls: list[LossCall], tp: TrainPass) -> list[Finding]:
    """The untrained model's loss against ln(C), for a single standard classification loss."""
    if len(calls) != 1:
        return []
    call = calls[0]
    logits, target = call.input.detach().float(), call.target
    if not isinstance(target, torch.Tensor) or call.kwargs.get("reduction", "mean") != "mean":
        return []
    value: float | None = None
    if call.name == "cross_entropy" and not target.is_floating_point() and target_problem(call) is None and logits.dim() >= 2:
        classes, chance_name = class_count(logits), f"ln({class_count(logits)})"
        value = float(torch.nn.functional.cross_entropy(logits, target, ignore_index=call.kwargs.get("ignore_index", -100)))
    elif call.name == "binary_cross_entropy_with_logits" and target.shape == logits.shape:
        classes, chance_name = 2, "ln(2)"
        value = float(torch.nn.functional.binary_cross_entropy_with_logits(logits, target.float()))
    if value is None or not math.isfinite(value):
        return []
    chance = math.log(classes)
    if value <= max(2 * chance, chance + 1.0):
        return []
    largest = float(logits.abs().max())
    inputs = [t for t in tensors_in(ctx.batch.inputs) if t.is_floating_point()]
    scale = max((float(t.abs().max()) for t in inputs if t.numel()), default=0.0)
    if scale > 20:
        cause, site = f" (the inputs reach {scale:.4g}: are they normalised?)", ctx.data_site(0)
    else:
        cause, site = " (is the last layer initialised with large weights?)", ctx.locate.module(_last_module(tp))
    return [FAR_FROM_CHANCE.finding(
        **where(site),
        fields={"loss": value, "chance_name": chance_name, "chance": chance, "classes": classes, "logit": largest,
                "cause": cause},
        evidence={"loss": round(value, 4), "ln_c": round(chance, 4), "max_logit": round(largest, 4)},
    )]


def _last_module(tp: TrainPass) -> str:
    """The last module with parameters that ran (usually the head)."""
    model = tp.copies.model
    ran = [name for name, m in model.named_modules() if name in tp.ran and any(True for _ in m.parameters(recurse=False))]
    return ran[-1] if ran else ""
