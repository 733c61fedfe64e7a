"""Optimizer coverage: every trainable parameter in exactly one param group (TD114, TD306),
and something to train at all (TD315). Read-only: looks at the user's own objects."""

from __future__ import annotations

from collections import Counter

from torch.nn import Parameter
from torch.optim import Optimizer

from torchdoctor.core.wording import listing
from torchdoctor.health.checks import Outcome, module_of
from torchdoctor.health.context import CheckContext
from torchdoctor.introspect.sites import Site, where
from torchdoctor.rules.grad_flow.no_trainable_parameters import RULE as NO_TRAINABLE
from torchdoctor.rules.optimizer.parameter_in_several_groups import RULE as SEVERAL_GROUPS
from torchdoctor.rules.optimizer.parameter_not_in_optimizer import GROUPS_HINT, SIBLING_GROUP
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
        what = (
            f"all {len(named)} parameter tensors of the model have requires_grad=False" if named
            else "the model has no registered parameters"
        )
        site = ctx.locate.best(ctx.locate.of(model))
        return Outcome([NO_TRAINABLE.finding(**where(site), fields={"what": what})], detail=what)
    if optimizer is None:
        return Outcome(skipped="no optimizer given")
    in_groups = Counter(id(p) for group in optimizer.param_groups for p in group["params"])
    findings = []
    missing = [(n, p) for n, p in trainable if id(p) not in in_groups]
    if missing:
        names = [n for n, _ in missing]
        findings.append(NOT_IN_OPTIMIZER.finding(
            **where(optimizer_site),
            message=NOT_IN_OPTIMIZER.message.format(count=len(names), names=listing(names)) + _why_missing(ctx, names, optimizer_site, in_groups, named),
            hint=_groups_hint(optimizer, names, named, optimizer_site),
        ))
    by_id = {id(p): n for n, p in named}
    repeated = [by_id.get(key, "a tensor outside the model") for key, count in in_groups.items() if count > 1]
    if repeated:
        findings.append(SEVERAL_GROUPS.finding(**where(optimizer_site),
                                               fields={"number": len(repeated), "names": listing(repeated)}))
    covered = sum(1 for _, p in trainable if id(p) in in_groups)
    detail = f"{type(optimizer).__name__}: {covered} of {len(trainable)} trainable parameter tensors in {len(optimizer.param_groups)} param group(s)"
    return Outcome(findings, detail=detail)


def _groups_hint(optimizer: Optimizer, names: list[str], named: list[tuple[str, Parameter]], site: Site | None) -> str | None:
    """For param groups built on purpose, what to add to which group (the rule's own hint,
    "build it from model.parameters()", would undo them); None keeps the rule's hint."""
    groups = optimizer.param_groups
    if len(groups) < 2:
        return None
    group_of = {id(p): index for index, group in enumerate(groups) for p in group["params"]}
    modules = {module_of(name) for name in names}
    siblings = [(n, group_of[id(p)]) for n, p in named if module_of(n) in modules and id(p) in group_of]
    indexes = {index for _, index in siblings}
    suggestion = ""
    if len(indexes) == 1:
        suggestion = SIBLING_GROUP.format(index=indexes.pop(), siblings=listing([f"`{n}`" for n, _ in siblings]))
    return GROUPS_HINT.format(names=listing([f"`{n}`" for n in names]), groups=len(groups), suggestion=suggestion,
                              at=f" (at {site.shown})" if site is not None else "")


def _why_missing(ctx: CheckContext, names: list[str], optimizer_site: Site | None, in_groups: Counter, named) -> str:  # type: ignore[no-untyped-def]
    """The likely cause, from where things were created and what the optimizer holds."""
    module = module_of(names[0])
    created = ctx.locate.of(dict(ctx.subject.model.named_modules()).get(module))
    if created is not None and optimizer_site is not None and created.file == optimizer_site.file and created.line > optimizer_site.line:
        return f" (`{module}` is created at {created.shown}, after the optimizer)"
    model_ids = {id(p) for _, p in named}
    strangers = sum(1 for key in in_groups if key not in model_ids)
    if strangers and strangers >= len(names):
        return f" (the optimizer holds {strangers} tensors that are not parameters of this model: was the model or a layer rebuilt after the optimizer?)"
    return ""
