"""Custom autograd Functions: gradcheck each one on a small float64 copy of the inputs it
received in the checked forward pass (TD311)."""

from __future__ import annotations

import re
from typing import Any

import torch
from torch.autograd.gradcheck import GradcheckError

from torchdoctor.health.context import CheckContext
from torchdoctor.health.outcome import Outcome
from torchdoctor.introspect.sites import definition_site, where
from torchdoctor.rules.grad_flow.custom_function_wrong_gradient import RULE as WRONG_GRADIENT

NAME = "custom-functions"
ORDER = 140  # its place in the report (core/plugins.py)
TITLE = "custom autograd Functions pass gradcheck"
#: what the check does, in its row of docs/check.md's table (`python -m torchdoctor.dev generate`)
DOES = "`torch.autograd.gradcheck` on a float64 slice of the inputs each custom `autograd.Function` received"
RULES = (WRONG_GRADIENT.code,)

#: inputs are cut to this many rows (dim 0) to keep gradcheck cheap
ROWS = 2


def run(ctx: CheckContext) -> Outcome:
    tp = ctx.train_pass()
    if tp.forward_failure is not None:
        return Outcome(skipped="the forward pass failed")
    if not tp.functions:
        return Outcome(skipped="the model uses no custom autograd.Function")
    findings = []
    checked = []
    for function, args in tp.functions.items():
        inputs = _small_double(args)
        if not any(isinstance(a, torch.Tensor) and a.requires_grad for a in inputs):
            continue
        checked.append(function.__name__)
        failure = _gradcheck(function, inputs)
        if failure is not None:
            site = definition_site(function.backward) or definition_site(function)
            findings.append(WRONG_GRADIENT.finding(**where(ctx.locate.best(site)),
                                                   fields={"function": function.__name__, "detail": failure}))
    return Outcome(findings, detail=f"gradcheck on {', '.join(checked) or 'nothing'}")


def _small_double(args: tuple[Any, ...]) -> tuple[Any, ...]:
    rows = {a.shape[0] for a in args if isinstance(a, torch.Tensor) and a.dim() > 0}
    cut = len(rows) == 1 and rows.pop() > ROWS
    out = []
    for a in args:
        if isinstance(a, torch.Tensor) and a.is_floating_point():
            a = a[:ROWS] if cut and a.dim() > 0 else a
            a = a.detach().to(torch.float64).requires_grad_(True)
        out.append(a)
    return tuple(out)


def _gradcheck(function: type[torch.autograd.Function], inputs: tuple[Any, ...]) -> str | None:
    try:
        torch.autograd.gradcheck(function.apply, inputs, fast_mode=True)
    except GradcheckError as exc:
        text = str(exc)
        numbers = dict(re.findall(r"(numerical|analytical):\s*(-?[\d.e+-]+)", text))
        if len(numbers) == 2:
            return f"finite differences give {float(numbers['numerical']):.4g}, its backward() {float(numbers['analytical']):.4g}"
        first = text.strip().splitlines()
        return first[0].rstrip(",") if first else "numerical and analytical gradients differ"
    except Exception:  # e.g. a Function that does not support float64: nothing to conclude
        return None
    return None
