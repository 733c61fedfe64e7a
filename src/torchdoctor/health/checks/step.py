"""One optimizer step on a copy: it changes every trainable parameter it should, and leaves
frozen parameters and frozen batch-norm statistics alone (TD116, TD132, TD307)."""

from __future__ import annotations

from typing import Any

import torch

from torchdoctor.core.finding import Finding
from torchdoctor.core.wording import listing
from torchdoctor.health.context import CheckContext
from torchdoctor.health.outcome import Outcome, module_of
from torchdoctor.introspect.sites import where
from torchdoctor.rules.mode.frozen_batchnorm_drift import RULE as BATCHNORM_DRIFT
from torchdoctor.rules.optimizer.frozen_parameter_updated import RULE as FROZEN_UPDATED
from torchdoctor.rules.optimizer.frozen_parameter_updated import reasons_variant
from torchdoctor.rules.optimizer.parameter_not_updated_by_step import RULE as NOT_UPDATED

NAME = "step"
ORDER = 70  # its place in the report (core/plugins.py)
TITLE = "one optimizer step updates what it should, and only that"
#: what the check does, in its row of docs/check.md's table (`python -m torchdoctor.dev generate`)
DOES = (
    "one optimizer step changes every trainable parameter, and leaves frozen parameters and frozen "
    "batch-norm statistics alone"
)
RULES = (FROZEN_UPDATED.code, BATCHNORM_DRIFT.code, NOT_UPDATED.code)

#: a parameter counts as "not updated" when at least this fraction of its elements with a
#: non-zero gradient kept their exact value
UNCHANGED_FRACTION = 0.5


def run(ctx: CheckContext) -> Outcome:
    tp = ctx.train_pass()
    if tp.forward_failure is not None:
        return Outcome(skipped="the forward pass failed")
    findings = _batchnorm_drift(ctx, tp)
    optimizer = tp.copies.optimizer
    if optimizer is None:
        return Outcome(findings, detail="no optimizer given: only batch-norm statistics checked")
    if tp.backward_failure is not None:
        return Outcome(findings, skipped="the backward pass failed")
    model = tp.copies.model
    named = list(model.named_parameters())
    before = {name: p.detach().clone() for name, p in named}
    grads = {name: p.grad for name, p in named}
    try:
        optimizer.step()
    except Exception as exc:  # the user's optimizer failed on real gradients
        return Outcome(findings, skipped=f"optimizer.step() raises {type(exc).__name__}: {exc}")
    ctx.stepped = True
    lr_of = {id(p): group.get("lr", None) for group in optimizer.param_groups for p in group["params"]}
    frozen_moved = [n for n, p in named if not p.requires_grad and not torch.equal(before[n], p.detach())]
    if frozen_moved:
        findings.append(_frozen_finding(ctx, tp, frozen_moved))
    stuck = []
    for name, p in named:
        grad = grads[name]
        lr = lr_of.get(id(p))
        if not p.requires_grad or grad is None or lr is None or _is_zero(lr) or grad.is_sparse:
            continue
        moving = grad != 0
        if bool(moving.any()):
            unchanged = (before[name] == p.detach()) & moving
            if float(unchanged.sum()) >= UNCHANGED_FRACTION * float(moving.sum()):
                stuck.append(name)
    if stuck:
        dtypes = {str(p.dtype).replace("torch.", "") for n, p in named if n in stuck}
        low = bool(dtypes & {"bfloat16", "float16"})
        findings.append(NOT_UPDATED.finding(
            **where(ctx.locate.best(ctx.locate.of(ctx.subject.optimizer))), variant="low-precision" if low else None,
            fields={"number": len(stuck), "names": listing(stuck), **({"dtypes": ", ".join(sorted(dtypes))} if low else {})},
        ))
    changed = sum(1 for n, p in named if p.requires_grad and not torch.equal(before[n], p.detach()))
    trainable = sum(1 for _, p in named if p.requires_grad)
    return Outcome(findings, detail=f"{type(optimizer).__name__}.step() changed {changed} of {trainable} trainable parameter tensors")


def _is_zero(lr: float | torch.Tensor) -> bool:
    return float(lr) == 0.0 if not isinstance(lr, torch.Tensor) else bool((lr == 0).all())


def _frozen_finding(ctx: CheckContext, tp, names: list[str]) -> Finding:  # type: ignore[no-untyped-def]
    optimizer = tp.copies.optimizer
    params = dict(tp.copies.model.named_parameters())
    group: dict[str, Any] = next((g for g in optimizer.param_groups if any(p is params[names[0]] for p in g["params"])), {})
    decay = group.get("weight_decay", 0)
    reasons = [*(["stale-grad"] if params[names[0]].grad is not None else []), *(["weight-decay"] if decay else []),
               *(["momentum"] if optimizer.state.get(params[names[0]]) else [])]
    name = listing(names, 3)
    site = ctx.locate.best(ctx.locate.of(ctx.subject.optimizer), ctx.locate.module(module_of(names[0])))
    return FROZEN_UPDATED.finding(**where(site), variant=reasons_variant(reasons),
                                  fields={"name": name, **({"decay": decay} if decay else {})})


def _batchnorm_drift(ctx: CheckContext, tp) -> list[Finding]:  # type: ignore[no-untyped-def]
    modules = dict(tp.copies.model.named_modules())
    findings = []
    for name, (mean, var) in tp.frozen_bn_before.items():
        module = modules[name]
        moved = max(float((module.running_mean - mean).abs().max()), float((module.running_var - var).abs().max()))
        if moved > 0:
            findings.append(BATCHNORM_DRIFT.finding(
                **where(ctx.locate.module(name)), fields={"name": f"`{name}`"},
                evidence={"module": name, "max_change": moved},
            ))
    return findings
