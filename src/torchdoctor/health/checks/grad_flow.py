"""Gradient flow: after one forward and backward pass, every trainable parameter has a
gradient (TD120). Frozen parameters are not an alarm.

For each parameter without one it says why, when it can: the operation that cut the graph
(found by walking back from the cut tensor to the parameters behind it), a module that never
ran, or an output that does not reach the loss.
"""

from __future__ import annotations

import linecache
from collections.abc import Sequence

import torch

from torchdoctor.core.finding import Severity
from torchdoctor.core.wording import listing
from torchdoctor.health.context import CheckContext
from torchdoctor.health.outcome import Outcome, group_by_module, module_of
from torchdoctor.health.tracer import Cut, leaves
from torchdoctor.introspect.sites import Site, where
from torchdoctor.rules.grad_flow.parameter_without_gradient import RULE as NO_GRADIENT

NAME = "grad-flow"
ORDER = 40  # its place in the report (core/plugins.py)
TITLE = "every trainable parameter gets a gradient"
#: what the check does, in its row of docs/check.md's table (`python -m torchdoctor.dev generate`)
DOES = (
    "after one backward, every trainable parameter has a gradient; names the module, and the "
    "`.detach()`/`.item()`/`.data`/`torch.tensor(t)` line that cut the graph, or the module that never "
    "ran. Frozen parameters are not an alarm"
)
RULES = (NO_GRADIENT.code,)
VALUE_READS = (".item()", ".tolist()", ".numpy()")


def run(ctx: CheckContext) -> Outcome:
    tp = ctx.train_pass()
    if tp.forward_failure is not None or tp.backward_failure is not None:
        return Outcome(skipped="the forward or backward pass failed")
    model = tp.copies.model
    trainable = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    if not trainable:
        return Outcome(skipped="no trainable parameters")
    missing = [(n, p) for n, p in trainable if p.grad is None]
    zero = [(n, p) for n, p in trainable if p.grad is not None and not bool(p.grad.any())]
    findings = []
    frozen_on_purpose = [n for n, _ in missing if _under_no_grad(tp, module_of(n))]
    missing = [(n, p) for n, p in missing if n not in frozen_on_purpose]
    for (cause, site, severity), names in _explain(ctx, tp, missing).items():
        findings.append(_finding(ctx, names, site, "no-gradient", {"objective": tp.objective or "the loss", "cause": cause},
                                 severity))
    if zero:
        names = [n for n, _ in zero]
        findings.append(_finding(ctx, names, ctx.locate.module(module_of(names[0])), "all-zero"))
    got = len(trainable) - len(missing) - len(zero) - len(frozen_on_purpose)
    detail = f"{got} of {len(trainable)} trainable parameter tensors got a gradient"
    if frozen_on_purpose:
        detail += f"; {len(frozen_on_purpose)} run only under torch.no_grad() (frozen on purpose)"
    if tp.objective and tp.objective != "the loss":
        detail += f" (from {tp.objective})"
    return Outcome(findings, detail=detail)


def _finding(ctx: CheckContext, names: list[str], site: Site | None, variant: str,  # type: ignore[no-untyped-def]
             fields: dict[str, str] | None = None, severity: Severity | None = None):
    return NO_GRADIENT.finding(**where(ctx.locate.best(site)), variant=variant, severity=severity,
                               fields={"count": len(names), "names": listing(names), **(fields or {})})


def _under_no_grad(tp, module: str) -> bool:  # type: ignore[no-untyped-def]
    """The module (or the one holding it) ran, but only with gradients off: frozen on purpose."""
    parts = module.split(".") if module else []
    for depth in range(len(parts), -1, -1):
        name = ".".join(parts[:depth])
        if name in tp.ran:
            return name not in tp.ran_with_grad
    return False


def _explain(ctx: CheckContext, tp, missing: Sequence[tuple[str, torch.Tensor]]) -> dict[tuple[str, Site | None, Severity | None], list[str]]:  # type: ignore[no-untyped-def]
    groups: dict[tuple[str, Site | None, Severity | None], list[str]] = {}
    remaining = list(missing)
    # a detached tensor that flows on explains a starved parameter better than a number read
    # out with .item() (usually for logging); otherwise the first cut wins
    ordered = sorted(tp.records.cuts, key=lambda cut: cut.op in VALUE_READS)
    for cut in ordered:
        if not remaining:
            break
        behind = leaves(cut.node)
        hit = [(n, p) for n, p in remaining if id(p) in behind]
        if hit:
            groups.setdefault(_cut_cause(ctx, cut), []).extend(n for n, _ in hit)
            remaining = [(n, p) for n, p in remaining if id(p) not in behind]
    for module, names in group_by_module(n for n, _ in remaining).items():
        if tp.ran and module not in tp.ran:
            cause = f"module `{module}` never runs in forward()"
        else:
            cause = f"the output of `{module or 'the model'}` does not reach the loss"
        groups.setdefault((cause, ctx.locate.module(module), None), []).extend(names)
    return groups


def _cut_cause(ctx: CheckContext, cut: Cut) -> tuple[str, Site | None, Severity | None]:
    """The cause, and WARNING for a plain `.detach()` (often deliberate: a linear probe on a
    frozen encoder); a NumPy round-trip, `.data`, `.item()` or re-wrapping stays an error."""
    site = cut.site or (ctx.locate.module(cut.module) if cut.module is not None else None)
    op = cut.op
    severity = None
    if op == ".detach()":
        text = linecache.getline(site.file, site.line) if site is not None else ""
        if ".numpy()" in text or ".tolist()" in text:
            op = ".detach().numpy()" if ".numpy()" in text else ".detach().tolist()"
        else:
            severity = Severity.WARNING
    where_text = f" at {site.shown}" if site is not None else ""
    stage = "forward()" if cut.phase == "forward" else "the loss"
    cause = f"`{op}` in {stage}{where_text} cuts the autograd graph before them"
    if severity is Severity.WARNING:
        cause += " (if that freezes them on purpose, say so with requires_grad_(False))"
    return cause, site, severity
