"""The model runs on the batch and the loss takes its output (TD300, TD301; TD108 when
BCELoss rejects raw scores).

Failures that a more specific check explains (a device or float64 mismatch, class targets out
of range or not integer) are left to that check, so each problem is reported once.
"""

from __future__ import annotations

import re

import torch

from torchdoctor.health.context import CheckContext, Failure
from torchdoctor.health.loss_targets import class_target_findings_possible
from torchdoctor.health.outcome import Outcome, shape
from torchdoctor.introspect.sites import where
from torchdoctor.introspect.tensors import tensors_in
from torchdoctor.rules.api.forward_raises import RULE as FORWARD_RAISES
from torchdoctor.rules.loss.logits_into_bce_loss import CPU_ERROR, scores_text
from torchdoctor.rules.loss.logits_into_bce_loss import RULE as LOGITS_INTO_BCE
from torchdoctor.rules.loss.loss_rejects_output import RULE as LOSS_REJECTS

NAME = "forward"
ORDER = 10  # its place in the report (core/plugins.py)
TITLE = "model and loss run on the batch"
#: what the check does, in its row of docs/check.md's table (`python -m torchdoctor.dev generate`)
DOES = "runs the model on the batch in training mode, then the loss and backward"
RULES = (FORWARD_RAISES.code, LOSS_REJECTS.code, LOGITS_INTO_BCE.code)


def run(ctx: CheckContext) -> Outcome:
    tp = ctx.train_pass()
    if tp.forward_failure is not None:
        return _forward_failed(ctx, tp.forward_failure, "forward pass")
    detail = f"output {_describe(tp.output)}"
    if tp.loss_failure is not None:
        return _loss_failed(ctx, tp, detail)
    if tp.loss is not None:
        detail += f"; {tp.loss_label} = {tp.loss.item():.4g}"
    elif not tp.loss_label:
        detail += "; no loss_fn given and none could be inferred: gradients checked with a stand-in objective"
    if tp.backward_failure is not None:
        return _forward_failed(ctx, tp.backward_failure, "backward pass")
    return Outcome(detail=detail)


def _forward_failed(ctx: CheckContext, failure: Failure, stage: str) -> Outcome:
    kind = ctx.failure_kind(failure)
    if kind == "device" or (kind == "dtype" and _float64_inputs(ctx)):
        return Outcome(failed=f"the {stage} raises {failure.text} (explained by the {kind} check)")
    module = failure.module
    fields: dict[str, object] = {"stage": stage, "error": failure.text}
    variant = None
    if module is not None:
        model_modules = dict(ctx.subject.model.named_modules())
        owner = model_modules.get(module)
        if module and owner is not None:
            variant, fields = "in-module", {**fields, "module": module, "type": type(owner).__name__}
        else:
            variant = "in-model"
        sizes = _linear_sizes(owner, failure.text)
        if sizes is not None:
            variant, fields = variant + "-features", {**fields, "features": sizes[0], "got": sizes[1]}
        site = failure.site or ctx.locate.module(module)
    else:
        site = failure.site or ctx.locate.module("")
    finding = FORWARD_RAISES.finding(**where(ctx.locate.best(site)), variant=variant, fields=fields)
    return Outcome([finding], detail=f"the {stage} raises {failure.text}")


def _loss_failed(ctx: CheckContext, tp, detail: str) -> Outcome:  # type: ignore[no-untyped-def]
    failure = tp.loss_failure
    if ctx.failure_kind(failure) == "device":
        return Outcome(failed=f"the loss raises {failure.text} (explained by the devices check)")
    if class_target_findings_possible(tp):
        return Outcome(failed=f"the loss raises {failure.text} (explained by the loss check)")
    targets = ctx.batch.targets
    site = failure.site or ctx.locate.best(ctx.locate.of(ctx.subject.loss_fn))
    output = tp.output
    if CPU_ERROR in failure.text and isinstance(output, torch.Tensor) and output.numel():
        values = scores_text(output)
        finding = LOGITS_INTO_BCE.finding(**where(site), fields={"values": values},
                                          evidence={"min": float(output.min()), "max": float(output.max())})
        return Outcome([finding], detail=f"{detail}; {tp.loss_label} rejects it: {values}")
    logits = getattr(output, "logits", None) if not isinstance(output, torch.Tensor) else None
    fields = {"loss": tp.loss_label, "error": failure.text, "output": _describe(tp.output), "targets": _describe(targets)}
    if isinstance(logits, torch.Tensor):  # a Hugging Face ModelOutput (or alike) handed to the loss whole
        finding = LOSS_REJECTS.finding(**where(site), variant="model-output",
                                       fields={**fields, "output_type": type(output).__name__, "logits": _describe(logits)})
    else:
        finding = LOSS_REJECTS.finding(**where(site), fields=fields)
    return Outcome([finding], detail=detail)


def _linear_sizes(owner: object, text: str) -> tuple[int, str] | None:
    """For "mat1 and mat2 shapes cannot be multiplied (32x64 and 32x10)" in a Linear layer:
    the input features the layer expects and those it gets, which the raw message leaves to
    decode (None when the failure is not that)."""
    match = re.search(r"\((\d+)x(\d+) and (\d+)x(\d+)\)", text)
    features = getattr(owner, "in_features", None)
    if match is None or features is None or int(match.group(2)) == features:
        return None
    return features, match.group(2)


def _float64_inputs(ctx: CheckContext) -> bool:
    import torch

    return any(t.dtype == torch.float64 for t in tensors_in(ctx.batch.inputs))


def _describe(value: object) -> str:
    found = tensors_in(value)
    if not found:
        return type(value).__name__
    first = found[0]
    text = f"{shape(first)} {str(first.dtype).replace('torch.', '')}"
    return text if len(found) == 1 else f"{text} (+{len(found) - 1} more tensors)"
