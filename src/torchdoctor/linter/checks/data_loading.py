"""DataLoader set-ups that go wrong with worker processes or with DistributedSampler:
functions that cannot be pickled (TD142), random generators copied into every worker (TD140),
a sampler whose epoch is never set (TD141)."""

from __future__ import annotations

import ast

from torchdoctor.linter.api import FILE_END, Context, Scope, argument, keyword, lint_check, literal
from torchdoctor.linter.names import dotted
from torchdoctor.linter.steps import TRACKED, called_in_loops, is_backward, loop_events, reached, stepped_optimizer
from torchdoctor.rules.data.rng_copied_into_workers import RULE as RNG_COPIED_INTO_WORKERS
from torchdoctor.rules.data.unpicklable_worker_function import RULE as UNPICKLABLE_WORKER_FUNCTION
from torchdoctor.rules.distributed.sampler_without_set_epoch import RULE as SAMPLER_WITHOUT_SET_EPOCH

_DATALOADER = "torch.utils.data.DataLoader"
_WORKER_FUNCTIONS = (("collate_fn", 6), ("worker_init_fn", 10))


def uses_workers(call: ast.Call, ctx: Context) -> bool:
    """`num_workers` is given and is not 0. A command-line option (`args.workers`) counts with
    its argparse default when this file declares it; other unknown values count as workers.
    Call it at FILE_END, when every `add_argument` of the file has been seen."""
    workers = argument(call, "num_workers", 5)
    if workers is None:
        return False
    value = literal(workers)
    if isinstance(workers, ast.Attribute):
        value = ctx.memo.get("argparse", {}).get(workers.attr, value)
    return not (isinstance(value, int) and value <= 0)


@lint_check((RNG_COPIED_INTO_WORKERS, UNPICKLABLE_WORKER_FUNCTION), ast.Call, names={"add_argument"}, needs_torch=False)
def remember_argparse_default(node: ast.Call, ctx: Context) -> None:
    """`parser.add_argument("--workers", type=int, default=4)`: `args.workers` defaults to 4."""
    options = [literal(a) for a in node.args]
    long = next((o for o in options if isinstance(o, str) and o.startswith("--")), None)
    dest = literal(keyword(node, "dest"))
    name = dest if isinstance(dest, str) else long[2:].replace("-", "_") if long else None
    if name is not None:
        default = keyword(node, "default")
        ctx.memo.setdefault("argparse", {})[name] = literal(default) if default is not None else None


def _is_dataloader(node: ast.Call, ctx: Context) -> bool:
    return ctx.qualified(node.func) == _DATALOADER


@lint_check(UNPICKLABLE_WORKER_FUNCTION, ast.Call, names={"DataLoader"}, needs_torch=True)
def unpicklable_worker_function(node: ast.Call, ctx: Context) -> None:
    if not _is_dataloader(node, ctx) or keyword(node, "multiprocessing_context") is not None:
        return
    for name, position in _WORKER_FUNCTIONS:
        value = argument(node, name, position)
        what = _unpicklable(value, ctx) if value is not None else None
        if what is not None:
            ctx.memo.setdefault(UNPICKLABLE_WORKER_FUNCTION.code, []).append((node, value, name, what))


@lint_check(UNPICKLABLE_WORKER_FUNCTION, FILE_END)
def report_unpicklable(tree: ast.Module, ctx: Context) -> None:
    for call, value, name, what in ctx.memo.get(UNPICKLABLE_WORKER_FUNCTION.code, []):
        if uses_workers(call, ctx):
            ctx.report(UNPICKLABLE_WORKER_FUNCTION, value, fields={"argument": name, "what": what})


def _unpicklable(value: ast.expr, ctx: Context) -> str | None:
    """"a lambda" / "the nested function `f`" when pickle cannot send `value` to a worker."""
    if isinstance(value, ast.Lambda):
        return "a lambda"
    if isinstance(value, ast.Call) and ctx.qualified(value.func) in ("functools.partial", "partial") and value.args:
        inner = _unpicklable(value.args[0], ctx)
        return f"a partial of {inner}" if inner else None
    if not isinstance(value, ast.Name):
        return None
    if value.id in ctx.memo.get("lambdas", {}).get(id(ctx.scope), set()) | ctx.memo.get("lambdas", {}).get(
            id(ctx.module_scope), set()):
        return f"`{value.id}` (a lambda)"
    scope: Scope | None = ctx.scope
    while scope is not None and scope is not ctx.module_scope:
        if any(s.name == value.id and s.parent is scope for s in ctx.scopes):
            return f"`{value.id}` (a function defined inside `{scope.name}`)"
        scope = scope.parent
    return None


@lint_check(UNPICKLABLE_WORKER_FUNCTION, ast.Assign, needs_torch=True)
def remember_lambdas(node: ast.Assign, ctx: Context) -> None:
    if isinstance(node.value, ast.Lambda):
        names = ctx.memo.setdefault("lambdas", {}).setdefault(id(ctx.scope), set())
        names.update(t.id for t in node.targets if isinstance(t, ast.Name))


# ---------------------------------------------------------------- TD140


@lint_check(RNG_COPIED_INTO_WORKERS, ast.Assign)
def rng_stored_on_dataset(node: ast.Assign, ctx: Context) -> None:
    info = ctx.class_info
    if info is None or not info.is_dataset or ctx.function is None or ctx.function.name != "__init__":
        return
    kind = ctx.kind(node.value)
    if kind is None or kind.tag != "rng":
        return
    for target in node.targets:
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
            ctx.memo.setdefault(RNG_COPIED_INTO_WORKERS.code, []).append((info, target.attr, node, kind.detail))


@lint_check(RNG_COPIED_INTO_WORKERS, ast.Attribute)
def rng_read_by_dataset(node: ast.Attribute, ctx: Context) -> None:
    info = ctx.class_info
    if info is None or not info.is_dataset or ctx.function is None or ctx.function.name == "__init__":
        return
    if isinstance(node.value, ast.Name) and node.value.id == "self" and isinstance(node.ctx, ast.Load):
        ctx.memo.setdefault("TD140-read", set()).add((id(info), node.attr))


@lint_check(RNG_COPIED_INTO_WORKERS, ast.Call, names={"DataLoader"})
def dataloader_with_workers(node: ast.Call, ctx: Context) -> None:
    if not _is_dataloader(node, ctx) or argument(node, "worker_init_fn", 10) is not None:
        return
    dataset = argument(node, "dataset", 0)
    kind = ctx.kind(dataset) if dataset is not None else None
    if kind is not None and kind.tag == "dataset":
        ctx.memo.setdefault("TD140-loaded", []).append((kind.detail, node))


@lint_check(RNG_COPIED_INTO_WORKERS, FILE_END, tracks=("get_worker_info", "seed", "manual_seed"))
def report_rng_in_workers(tree: ast.Module, ctx: Context) -> None:
    loaded = {name for name, call in ctx.memo.get("TD140-loaded", []) if uses_workers(call, ctx)}
    read = ctx.memo.get("TD140-read", set())
    for info, attribute, node, what in ctx.memo.get(RNG_COPIED_INTO_WORKERS.code, []):
        if info.name not in loaded or (id(info), attribute) not in read or _reseeds(info, ctx):
            continue
        ctx.report(RNG_COPIED_INTO_WORKERS, node,
                   fields={"what": f"`self.{attribute} = {what}(...)`", "dataset": info.name})


def _reseeds(info: object, ctx: Context) -> bool:
    """The dataset reseeds itself per worker (`get_worker_info()` or a `seed` call in a method)."""
    return any(s.cls is info and any(e.name in ("get_worker_info", "seed", "manual_seed") for e in s.events)
               for s in ctx.scopes)


# ---------------------------------------------------------------- TD141


@lint_check(SAMPLER_WITHOUT_SET_EPOCH, ast.Call, names={"DataLoader"})
def loader_with_distributed_sampler(node: ast.Call, ctx: Context) -> None:
    if not _is_dataloader(node, ctx):
        return
    sampler = argument(node, "sampler", 3)
    kind = ctx.kind(sampler) if sampler is not None else None
    if kind is None or kind.tag != "sampler" or not isinstance(kind.node, ast.Call):
        return
    if literal(keyword(kind.node, "shuffle")) is False:
        return  # no shuffling, so no epoch to set
    if isinstance(sampler, ast.Call):  # `DataLoader(..., sampler=DistributedSampler(dataset))`, returned or passed on
        ctx.memo.setdefault("TD141-inline", []).append(sampler)
    statement = ctx.statement
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
        loader = dotted(statement.targets[0])
        if loader is not None:
            name = dotted(sampler) or "sampler"  # type: ignore[arg-type]
            ctx.memo.setdefault(SAMPLER_WITHOUT_SET_EPOCH.code, []).append((ctx.scope, loader, name, node))


@lint_check(SAMPLER_WITHOUT_SET_EPOCH, FILE_END, tracks=("set_epoch", *TRACKED))
def report_sampler_without_epoch(tree: ast.Module, ctx: Context) -> None:
    if any(e.name == "set_epoch" for s in ctx.scopes for e in s.events):
        return
    reported = False
    for scope, loader, sampler, node in ctx.memo.get(SAMPLER_WITHOUT_SET_EPOCH.code, []):
        epoch_loop = _epoch_loop(scope, loader)
        if epoch_loop is not None:
            reported = True
            ctx.report(SAMPLER_WITHOUT_SET_EPOCH, epoch_loop, fields={"sampler": f"`{sampler}`"})
    inline = ctx.memo.get("TD141-inline", [])
    training = _training_loader_loop(ctx) if inline and not reported else None
    if training is not None:
        ctx.report(SAMPLER_WITHOUT_SET_EPOCH, training, fields={"sampler": f"`{ctx.text(inline[0])}` (line {inline[0].lineno})"})


def _training_loader_loop(ctx: Context) -> ast.AST | None:
    """A loop over a DataLoader that trains (reaches a `step()` or `backward()`) and runs once per
    epoch: inside another loop, or in a function a loop calls (`for epoch ...: self._run_epoch()`).
    Where the loader that `DataLoader(..., sampler=DistributedSampler(...))` made goes cannot be
    followed through returns and attributes; the training loop is the one it feeds."""
    per_pass = called_in_loops(ctx)
    for scope in ctx.scopes:
        for info in scope.loops.values():
            if info.iterates != "dataloader" or (info.parent is None and id(scope) not in per_pass):
                continue
            if any(is_backward(e) or stepped_optimizer(e) for e, _ in reached(loop_events(scope, info.node), ctx)):
                return info.node
    return None


def _epoch_loop(scope: Scope, loader: str) -> ast.AST | None:
    """The outer loop that goes over `loader` once per pass (directly, or by handing it to a call)."""
    for info in scope.loops.values():
        if info.iter_name == loader and info.parent is not None:
            return info.parent
    for event in scope.events:
        if event.name == "call" and event.loops and isinstance(event.node, ast.Call):
            if any(dotted(a) == loader for a in event.node.args) or any(dotted(k.value) == loader for k in event.node.keywords):
                return event.loops[0]
    return None
