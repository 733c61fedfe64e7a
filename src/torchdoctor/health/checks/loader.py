"""The DataLoader: workers vs CPUs, picklability under spawn, shared memory, throughput,
and random generators every worker copies (TD140, TD142, TD312, TD313, TD314).

Environment facts (CPU count, free /dev/shm, start method) come from the machine unless the
options inject them (tests, and the documentation examples, use a simulated small machine).
"""

from __future__ import annotations

import io
import multiprocessing
import os
import pickle
import shutil
import sys
from typing import Any

import torch
from torch.utils.data import DataLoader

from torchdoctor.core.finding import Finding, Severity
from torchdoctor.health.batch import PROBE_BATCHES, PROBE_MAX_SECONDS, call_model, nbytes, scalar_loss
from torchdoctor.health.context import CheckContext, stand_in_objective
from torchdoctor.health.outcome import Outcome
from torchdoctor.health.timing import fastest_seconds, one_thread
from torchdoctor.introspect.rng import rng_objects
from torchdoctor.introspect.sites import Site, attribute_site, definition_site, where
from torchdoctor.rules.data.rng_copied_into_workers import RULE as RNG_COPIED
from torchdoctor.rules.data.shared_memory_too_small import RULE as SHM_TOO_SMALL
from torchdoctor.rules.data.unpicklable_worker_function import RULE as UNPICKLABLE
from torchdoctor.rules.performance.input_bound_loader import RULE as INPUT_BOUND
from torchdoctor.rules.performance.too_many_workers import RULE as TOO_MANY_WORKERS

NAME = "dataloader"
ORDER = 130  # its place in the report (core/plugins.py)
TITLE = "the DataLoader keeps up and works with workers"
#: what the check does, in its row of docs/check.md's table (`python -m torchdoctor.dev generate`)
DOES = (
    "workers vs CPUs, picklability under spawn, `/dev/shm` vs prefetched batches, loader time vs one "
    "training step (the fastest of 5 batches after the prefetched ones vs the fastest of 5 plain steps, "
    "on one thread, beside a reference work: ratios that a busy machine does not change), random "
    "generators every worker copies"
)
RULES = (TOO_MANY_WORKERS.code, UNPICKLABLE.code, SHM_TOO_SMALL.code, INPUT_BOUND.code, RNG_COPIED.code)

#: the loader is input-bound when a batch takes this many times one training step, and more
#: than MIN_LOAD_UNITS times the reference work measured beside it (about 8 ms on an idle
#: machine; below that, timing noise on tiny models decides). Both are ratios of times measured
#: in this process, so a busy machine, which slows both sides, does not change the verdict.
INPUT_BOUND_RATIO = 1.5
MIN_LOAD_UNITS = 200
#: plain training steps timed (after one warm-up), the fastest kept, for the step's side of the comparison
STEP_REPEATS = 5


def available_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def shm_free_bytes() -> int | None:
    if not sys.platform.startswith("linux") or not os.path.isdir("/dev/shm"):
        return None
    try:
        return shutil.disk_usage("/dev/shm").free
    except OSError:
        return None


def start_method(loader: DataLoader) -> str:
    context = loader.multiprocessing_context
    if context is not None:
        return context.get_start_method() if hasattr(context, "get_start_method") else str(context)
    return multiprocessing.get_start_method(allow_none=True) or multiprocessing.get_context().get_start_method()


def human_bytes(count: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if count < 1000 or unit == "GB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1000
    return f"{count:.1f} GB"  # pragma: no cover


def human_seconds(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


class _Null(io.RawIOBase):
    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        return len(data)


def unpicklable(obj: Any) -> str | None:
    """Why `obj` cannot be pickled (the exception text), or None when it can."""
    try:
        pickle.Pickler(_Null(), protocol=pickle.HIGHEST_PROTOCOL).dump(obj)
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def run(ctx: CheckContext) -> Outcome:
    loader = ctx.subject.data
    if not isinstance(loader, DataLoader):
        return Outcome(skipped="the data is one batch, not a DataLoader")
    options = ctx.options
    workers = loader.num_workers
    cpus = options.cpu_count or available_cpus()
    loader_site = ctx.locate.best(ctx.locate.of(loader))
    findings: list[Finding] = []
    notes: list[str] = [f"{workers} worker(s)"]
    if workers > cpus:
        findings.append(TOO_MANY_WORKERS.finding(**where(loader_site), fields={"workers": workers, "cpus": cpus}))
    if workers > 0:
        method = options.start_method or start_method(loader)
        notes.append(f"start method {method}")
        findings += _pickling(ctx, loader, method, loader_site)
        findings += _shared_memory(ctx, loader, loader_site)
        if loader.worker_init_fn is None:
            findings += _generators(ctx, loader, loader_site)
        if not loader.persistent_workers and ctx.batch.loader_times is not None:
            notes.append(f"workers restart every epoch (first batch after {human_seconds(ctx.batch.loader_times.first)})")
    notices: list[str] = []
    findings += _throughput(ctx, loader, loader_site, notes, notices)
    if loader.pin_memory and not torch.cuda.is_available():
        notes.append("pin_memory=True has no effect without CUDA")
    elif not loader.pin_memory and any(p.is_cuda for p in ctx.subject.model.parameters()):
        notes.append("pin_memory=False while the model is on CUDA: pin_memory=True speeds up host-to-device copies")
    return Outcome(findings, detail="; ".join(notes), notices=notices)


def _pickling(ctx: CheckContext, loader: DataLoader, method: str, loader_site: Site | None) -> list[Finding]:
    """What spawn/forkserver workers must receive by pickling: dataset, collate_fn, worker_init_fn."""
    severity = Severity.ERROR if method in ("spawn", "forkserver") else None
    findings = []
    for argument in ("collate_fn", "worker_init_fn"):
        value = getattr(loader, argument)
        if value is None or unpicklable(value) is None:
            continue
        site = definition_site(value) if callable(value) and hasattr(value, "__code__") else None
        what = _callable_name(value)
        findings.append(UNPICKLABLE.finding(**where(ctx.locate.best(site, loader_site)), severity=severity,
                                            fields={"argument": argument, "what": what}))
    dataset = loader.dataset
    if unpicklable(dataset) is not None:
        attribute, value = _culprit(dataset)
        site = attribute_site(type(dataset), attribute) if attribute else None
        if site is None and callable(value) and hasattr(value, "__code__"):
            site = definition_site(value)
        label = f"{type(dataset).__name__}.{attribute}" if attribute else type(dataset).__name__
        findings.append(UNPICKLABLE.finding(**where(ctx.locate.best(site, loader_site)), severity=severity,
                                            variant="dataset",
                                            fields={"dataset": type(dataset).__name__, "attribute": label,
                                                    "what": _callable_name(value)}))
    return findings


def _callable_name(value: Any) -> str:
    """`a lambda`, `a function defined inside make()`, or the object's type."""
    qualname = getattr(value, "__qualname__", "")
    if qualname.endswith("<lambda>"):
        return "a lambda"
    if "<locals>" in qualname:
        return f"`{qualname.split('.<locals>.')[-1]}` (a function defined inside {qualname.split('.<locals>.')[0]}())"
    return f"`{qualname}`" if qualname else f"a {type(value).__name__}"


def _culprit(dataset: Any) -> tuple[str | None, Any]:
    for attribute, value in vars(dataset).items() if hasattr(dataset, "__dict__") else []:
        if unpicklable(value) is not None:
            return attribute, value
    return None, dataset


def _shared_memory(ctx: CheckContext, loader: DataLoader, loader_site: Site | None) -> list[Finding]:
    free = ctx.options.shm_free_bytes if ctx.options.shm_free_bytes is not None else shm_free_bytes()
    if free is None:
        return []
    prefetch = loader.prefetch_factor or 2
    batch = nbytes((ctx.batch.inputs, ctx.batch.targets))
    need = batch * loader.num_workers * prefetch
    if need <= free:
        return []
    return [SHM_TOO_SMALL.finding(
        **where(loader_site),
        fields={"workers": loader.num_workers, "prefetch": prefetch, "batch": human_bytes(batch),
                "need": human_bytes(need), "free": human_bytes(free)},
        evidence={"need_bytes": need, "free_bytes": free},
    )]


def _generators(ctx: CheckContext, loader: DataLoader, loader_site: Site | None) -> list[Finding]:
    dataset = loader.dataset
    findings = []
    for path, generator in rng_objects(dataset):
        attribute = path.split(".")[0].split("[")[0]
        site = attribute_site(type(dataset), attribute)
        kind = f"{type(generator).__module__.split('.')[0]}.{type(generator).__name__}".replace("numpy.", "np.random.")
        findings.append(RNG_COPIED.finding(**where(ctx.locate.best(site, loader_site)),
                                           fields={"what": f"`self.{path}` ({kind})",
                                                   "dataset": type(dataset).__name__}))
    return findings


def _throughput(ctx: CheckContext, loader: DataLoader, loader_site: Site | None, notes: list[str],
                notices: list[str]) -> list[Finding]:
    times = ctx.batch.loader_times
    if times is None:
        return []
    if times.capped:
        notes.append(f"the probe stopped at its {PROBE_MAX_SECONDS:g} s time cap")
        notices.append(f"the DataLoader probe stopped at its {PROBE_MAX_SECONDS:g} s time cap (a safety net) before it timed "
                       f"{PROBE_BATCHES} batches after the prefetched ones: the throughput verdict (TD314) rests on "
                       f"{len(times.later)} batch(es) and on this machine's load")
    load = times.per_batch
    if load is None:
        notes.append("too few batches to time the loader")
        return []
    step = _step_seconds(ctx)
    if step is None or step <= 0:
        return []
    notes.append(f"{human_seconds(load)} per batch vs {human_seconds(step)} per training step")
    if load <= INPUT_BOUND_RATIO * step or load <= MIN_LOAD_UNITS * times.reference:
        return []
    workers = loader.num_workers
    fields: dict[str, object] = {"load": human_seconds(load), "step": human_seconds(step), "ratio": load / step}
    return [INPUT_BOUND.finding(
        **where(loader_site), variant="no-workers" if workers == 0 else None,
        fields=fields if workers == 0 else {**fields, "workers": workers},
        evidence={"load_seconds": load, "step_seconds": step, "reference_seconds": times.reference},
    )]


def _step_seconds(ctx: CheckContext) -> float | None:
    """One plain training step on the checked batch, timed here, beside the loader's times: the
    fastest of STEP_REPEATS after a warm-up, on one thread like the loader's batches (see
    timing.py), on a copy, untraced (the tracer's own cost and first-call costs are not counted).
    None when the training pass failed."""
    tp = ctx.train_pass()
    if tp.forward_failure is not None or tp.loss_failure is not None or tp.backward_failure is not None:
        return None
    copies = ctx.copies()
    model, optimizer = copies.model, copies.optimizer
    loss_fn = ctx.loss_call(tp) if not tp.loss_is_users else copies.loss_fn
    model.train()
    inputs, targets = ctx.batch.fresh()

    cuda = any(p.is_cuda for p in model.parameters())

    def step() -> None:
        if optimizer is not None:
            optimizer.zero_grad(set_to_none=True)
        objective = scalar_loss(loss_fn, model, inputs, targets) if loss_fn is not None else stand_in_objective(call_model(model, inputs))
        if objective is not None and objective.requires_grad:
            objective.backward()
        if optimizer is not None:
            optimizer.step()
        if cuda:
            torch.cuda.synchronize()  # the GPU's work, not only its launch

    try:
        with torch.enable_grad(), one_thread():
            return fastest_seconds(step, STEP_REPEATS)
    except Exception:  # noqa: BLE001 - the training pass worked once; a copy that fails is no verdict
        return None


