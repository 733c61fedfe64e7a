"""Eval determinism: two forward passes in eval mode agree (TD130, TD305).

When they do not, the tracer says what drew random numbers: `F.dropout` called without
`training=` (TD130), an `nn.Dropout` that eval() does not reach, or other noise in forward().
A functional dropout written with an explicit `training=True` (Monte Carlo dropout) is
deliberate and not reported.
"""

from __future__ import annotations

import torch

from torchdoctor.core.finding import Finding
from torchdoctor.health.batch import call_model
from torchdoctor.health.context import CheckContext
from torchdoctor.health.outcome import Outcome
from torchdoctor.health.tracer import ModuleWatch, Tracer
from torchdoctor.introspect.sites import definition_site, where
from torchdoctor.introspect.tensors import tensors_in
from torchdoctor.rules.mode.eval_nondeterministic import RULE as EVAL_NONDETERMINISTIC
from torchdoctor.rules.mode.functional_dropout_ignores_eval import RULE as FUNCTIONAL_DROPOUT

NAME = "eval-determinism"
ORDER = 110  # its place in the report (core/plugins.py)
TITLE = "eval mode is deterministic"
#: what the check does, in its row of docs/check.md's table (`python -m torchdoctor.dev generate`)
DOES = "two forward passes in eval mode agree; names the `F.dropout` without `training=`"
RULES = (FUNCTIONAL_DROPOUT.code, EVAL_NONDETERMINISTIC.code)

SAMPLES = 8
#: relative difference between the two passes that counts as "different" (GPU kernels with
#: atomics are not bit-reproducible, randomness differs by the size of the values)
TOLERANCE = 1e-4


def run(ctx: CheckContext) -> Outcome:
    tp = ctx.train_pass()
    if tp.forward_failure is not None:
        return Outcome(skipped="the forward pass failed")
    model = ctx.eval_copy().model
    inputs, _ = ctx.batch.head(SAMPLES).fresh()
    watch = ModuleWatch(model)
    tracer = Tracer(watch)
    try:
        with torch.no_grad(), tracer:
            first = tensors_in(call_model(model, inputs))
            second = tensors_in(call_model(model, inputs))
    except Exception as exc:  # e.g. a model that fails in eval mode only
        return Outcome(skipped=f"the model does not run in eval mode ({type(exc).__name__}: {exc})")
    finally:
        watch.close()
    difference = scale = 0.0
    for a, b in zip(first, second):
        if a.is_floating_point() and a.shape == b.shape and a.numel():
            both = torch.isfinite(a) & torch.isfinite(b)
            difference = max(difference, float((a - b)[both].abs().max()) if bool(both.any()) else 0.0)
            scale = max(scale, float(a[both].abs().max()) if bool(both.any()) else 0.0)
    differs = difference > TOLERANCE * max(scale, 1e-12)
    findings: list[Finding] = []
    seen = set()
    for call in tracer.records.dropouts:
        key = (call.site, call.direct)
        if key in seen or (call.direct and call.explicit_training):
            continue
        seen.add(key)
        if call.direct:
            findings.append(FUNCTIONAL_DROPOUT.finding(**where(ctx.locate.best(call.site)),
                                                       fields={"call": "F.dropout(...)"}))
        elif differs:
            cause = "an nn.Dropout that model.eval() does not reach keeps dropping (is it registered? see TD122)"
            site = call.site or ctx.locate.module(call.module or "")
            findings.append(EVAL_NONDETERMINISTIC.finding(**where(ctx.locate.best(site)),
                                                          fields={"difference": difference, "cause": cause}))
    if differs and not tracer.records.dropouts:
        cause = "forward() draws random numbers in eval mode (noise, random masks or sampling not guarded by `if self.training:`)"
        site = definition_site(type(ctx.subject.model).forward) or ctx.locate.module("")
        findings.append(EVAL_NONDETERMINISTIC.finding(**where(ctx.locate.best(site)),
                                                      fields={"difference": difference, "cause": cause}))
    detail = f"two eval passes differ by up to {difference:.3g}" if differs else "two eval passes agree"
    return Outcome(findings, detail=detail)
