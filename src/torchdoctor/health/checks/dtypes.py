"""Dtypes: float64 leaking in, float16 on the CPU (TD146, TD310).

A model that is float64 throughout, fed float64, is deliberate and not reported.
"""

from __future__ import annotations

from collections import Counter

import torch

from torchdoctor.core.finding import Severity
from torchdoctor.core.wording import listing
from torchdoctor.health.context import CheckContext
from torchdoctor.health.outcome import Outcome, module_of
from torchdoctor.introspect.sites import where
from torchdoctor.introspect.tensors import tensors_in
from torchdoctor.rules.dtype.half_precision_on_cpu import RULE as HALF_ON_CPU
from torchdoctor.rules.dtype.unintended_float64 import RULE as FLOAT64

NAME = "dtypes"
ORDER = 30  # its place in the report (core/plugins.py)
TITLE = "dtypes of parameters, inputs and targets"
#: what the check does, in its row of docs/check.md's table (`python -m torchdoctor.dev generate`)
DOES = "float64 parameters or inputs next to float32 (NumPy leaking in), float16 on the CPU"
RULES = (FLOAT64.code, HALF_ON_CPU.code)


def _name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def run(ctx: CheckContext) -> Outcome:
    model = ctx.subject.model
    params = [(n, p) for n, p in model.named_parameters() if p.is_floating_point()]
    counts = Counter(p.dtype for _, p in params)
    findings = []
    main = counts.most_common(1)[0][0] if counts else torch.float32
    doubles = [n for n, p in params if p.dtype == torch.float64]
    if doubles and torch.float32 in counts:
        site = ctx.locate.module(module_of(doubles[0]))
        findings.append(FLOAT64.finding(
            **where(site),
            fields={"what": f"parameter(s) {listing(doubles, 3)}", "other": "the rest of the model",
                    "consequence": "layers that mix them fail with a dtype error, or compute in float64 (many times slower on a GPU)"},
        ))
    tp = ctx.train_pass()
    failure = tp.forward_failure
    crashed = failure is not None and ctx.failure_kind(failure) == "dtype"
    model_is_double = main == torch.float64
    inputs = [t for t in tensors_in(ctx.batch.inputs) if t.dtype == torch.float64]
    if inputs and not model_is_double and counts:
        consequence = (
            f"the forward pass raises \"{failure.text}\"" if failure is not None and crashed
            else "every layer it reaches computes in float64 (slower, twice the memory)"
        )
        findings.append(FLOAT64.finding(
            **where(ctx.data_site(0)), severity=Severity.ERROR if crashed else None,
            fields={"what": "the input batch", "other": "the model", "consequence": consequence},
        ))
    prediction = tp.prediction
    targets = [t for t in tensors_in(ctx.batch.targets) if t.dtype == torch.float64]
    if targets and prediction is not None and prediction.dtype == torch.float32:
        findings.append(FLOAT64.finding(
            **where(ctx.data_site(1)),
            fields={"what": "the targets", "other": "the model output",
                    "consequence": "the loss and its gradient are computed in float64"},
        ))
    halves = [n for n, p in params if p.dtype == torch.float16 and p.device.type == "cpu"]
    if halves:
        site = ctx.locate.module(module_of(halves[0]))
        findings.append(HALF_ON_CPU.finding(**where(site),
                                            fields={"number": len(halves), "names": listing(halves, 3)}))
    summary = ", ".join(f"{n} {_name(d)}" for d, n in counts.most_common()) or "no floating parameters"
    input_dtypes = sorted({_name(t.dtype) for t in tensors_in(ctx.batch.inputs)})
    return Outcome(findings, detail=f"parameters: {summary}; inputs {', '.join(input_dtypes) or '-'}")
