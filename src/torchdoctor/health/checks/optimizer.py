"""Optimizer coverage: every trainable parameter in exactly one param group (TD114, TD306),
and something to train at all (TD315). Read-only: looks at the user's own objects."""

from __future__ import annotations

from collections import Counter

from torch.nn import Parameter
from torch.optim import Optimizer

from torchdoctor.core.wording import listing
from torchdoctor.health.context import CheckContext
from torchdoctor.health.outcome import Outcome, module_of
from torchdoctor.introspect.sites import Site, where
from torchdoctor.rules.grad_flow.no_trainable_parameters import RULE as NO_TRAINABLE
from torchdoctor.rules.optimizer.parameter_in_several_groups import RULE as SEVERAL_GROUPS
from torchdoctor.rules.optimizer.parameter_not_in_optimizer import RULE as NOT_IN_OPTIMIZER

NAME = "optimizer"
ORDER = 60  # its place in the report (core/plugins.py)
TITLE = "the optimizer covers every trainable parameter"
#: what the check does, in its row of docs/check.md's table (`python -m torchdoctor.dev generate`)
DOES = "trainable parameters in no param group, parameters in two groups, nothing trainable at all"
RULES = (NOT_IN_OPTIMIZER.code, SEVERAL_GROUPS.code, NO_TRAINABLE.code)


def run(ctx: CheckContext) -> Outcome:
    model, optimizer = ctx.subject.model, ctx.subject.optimizer
    named = list(model.named_parameters())
    trainable = [(n, p) for n, p in named if p.requires_grad]
    optimizer_site = ctx.locate.best(ctx.locate.of(optimizer)) if optimizer is not None else None
    if not trainable:
        finding = (NO_TRAINABLE.finding(**where(ctx.locate.best(ctx.locate.of(model))), fields={"count": len(named)})
                   if named else NO_TRAINABLE.finding(**where(ctx.locate.best(ctx.locate.of(model))), variant="no-parameters"))
        return Outcome([finding], detail=finding.message.removesuffix(": nothing can train"))
    if optimizer is None:
        return Outcome(skipped="no optimizer given")
    in_groups = Counter(id(p) for group in optimizer.param_groups for p in group["params"])
    findings = []
    missing = [(n, p) for n, p in trainable if id(p) not in in_groups]
    if missing:
        names = [n for n, _ in missing]
        cause, cause_fields = _why_missing(ctx, names, optimizer_site, in_groups, named)
        groups, groups_fields = _groups(optimizer, names, named, optimizer_site)
        findings.append(NOT_IN_OPTIMIZER.finding(
            **where(optimizer_site), variant=tuple(v for v in (cause, groups) if v) or None,
            fields={"count": len(names), "names": listing(names), **cause_fields, **groups_fields},
        ))
    by_id = {id(p): n for n, p in named}
    repeated = [by_id.get(key, "a tensor outside the model") for key, count in in_groups.items() if count > 1]
    if repeated:
        findings.append(SEVERAL_GROUPS.finding(**where(optimizer_site),
                                               fields={"number": len(repeated), "names": listing(repeated)}))
    covered = sum(1 for _, p in trainable if id(p) in in_groups)
    detail = f"{type(optimizer).__name__}: {covered} of {len(trainable)} trainable parameter tensors in {len(optimizer.param_groups)} param group(s)"
    return Outcome(findings, detail=detail)


def _groups(optimizer: Optimizer, names: list[str], named: list[tuple[str, Parameter]],
            site: Site | None) -> tuple[str | None, dict[str, object]]:
    """For param groups built on purpose, the rule's variant that says what to add to which group
    (the rule's own hint, "build it from model.parameters()", would undo them), and its fields;
    (None, {}) keeps the rule's hint."""
    groups = optimizer.param_groups
    if len(groups) < 2:
        return None, {}
    group_of = {id(p): index for index, group in enumerate(groups) for p in group["params"]}
    modules = {module_of(name) for name in names}
    siblings = [(n, group_of[id(p)]) for n, p in named if module_of(n) in modules and id(p) in group_of]
    indexes = {index for _, index in siblings}
    fields: dict[str, object] = {"params": listing([f"`{n}`" for n in names]), "groups": len(groups)}
    variant = "groups"
    if len(indexes) == 1:
        variant += "-sibling"
        fields |= {"index": indexes.pop(), "siblings": listing([f"`{n}`" for n, _ in siblings])}
    if site is None:
        return variant + "-unplaced", fields
    return variant, {**fields, "at": site.shown}


def _why_missing(ctx: CheckContext, names: list[str], optimizer_site: Site | None, in_groups: Counter[int],
                 named: list[tuple[str, Parameter]]) -> tuple[str | None, dict[str, object]]:
    """The rule's variant for the likely cause, from where things were created and what the
    optimizer holds, and its fields; (None, {}) when no cause shows."""
    module = module_of(names[0])
    created = ctx.locate.of(dict(ctx.subject.model.named_modules()).get(module))
    if created is not None and optimizer_site is not None and created.file == optimizer_site.file and created.line > optimizer_site.line:
        return "created-after", {"module": module, "created": created.shown}
    model_ids = {id(p) for _, p in named}
    strangers = sum(1 for key in in_groups if key not in model_ids)
    if strangers and strangers >= len(names):
        return "foreign-tensors", {"strangers": strangers}
    return None, {}
