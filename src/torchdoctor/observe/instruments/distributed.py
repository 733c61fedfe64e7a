"""What torch.distributed does in this process: the process group, DDP wrappers, and every
collective the program calls, in order.

Why a list of collectives: a collective completes only when every rank of its group calls it,
in the same order. When one rank calls `all_reduce` under `if rank == 0:` while the others call
`barrier`, the job hangs (or, when the two calls happen to match, silently pairs the wrong
tensors). Each rank keeps its own sequence (op, shape, group, the user's line): appending to
an array is all a call costs, and nothing is sent to the other ranks. The runner compares the
ranks' sequences (run/ranks.py), at the end or while they hang.

The sequence reaches the runner through a state file per process in the run folder, written at
`init_process_group`, at exit, and by a watchdog thread when a collective has been waiting for
more than `WAITING_AFTER` seconds (so a rank that hangs, or is killed while hanging, has already
said where it was). The watchdog only reads Python state and writes a file: it never touches
torch or the process group.

The state file also says where the rank stands in its job (its host, the store it rendezvoused
through, its launcher's variables: run/nodes/job.py), so that the runner knows when the job spans
other nodes. In such a job, global rank 0 waits at its exit until the other nodes' last records
have come through the store (run/nodes/final.py); when the store is its own (no torchrun), it
keeps it open until then, past `destroy_process_group`.
"""

from __future__ import annotations

import atexit
import inspect
import json
import os
import threading
import time
import weakref
from array import array
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from torchdoctor.core.locate import caller_in_user_code
from torchdoctor.observe.events import Location
from torchdoctor.observe.instruments.compiled import traced
from torchdoctor.observe.patching import Patches, observed, observed_init
from torchdoctor.run.nodes.final import await_peers
from torchdoctor.run.nodes.job import Launch, launch_facts, read_json, surely_spans
from torchdoctor.run.records import CONFIG_FILE, collectives_path

#: collective -> the argument whose shape every rank must agree on (None: no tensor to compare)
COLLECTIVES: dict[str, str | None] = {
    "all_reduce": "tensor",
    "reduce": "tensor",
    "broadcast": "tensor",
    "all_gather": "tensor",
    "all_gather_into_tensor": "input_tensor",
    "gather": "tensor",
    "scatter": "tensor",
    "reduce_scatter": "output",
    "reduce_scatter_tensor": "input",
    "all_to_all": None,
    "all_to_all_single": None,
    "barrier": None,
    "monitored_barrier": None,
    "all_gather_object": None,
    "broadcast_object_list": None,
    "gather_object": None,
    "scatter_object_list": None,
}
ROOTS = ("src", "dst", "group_src", "group_dst")
#: seconds a collective waits before the watchdog writes where this rank is
WAITING_AFTER = 2.0
#: how often the watchdog looks
TICK = 0.25
#: calls written to the state file (the most recent ones; a hang is near the end)
WINDOW = 4096


class DistributedIndex:
    """The process group, DDP instances, and the ordered collectives of this process."""

    def __init__(self) -> None:
        self.folder: Path | None = None
        self.rank: int | None = None
        self.world = 1
        self.timeout: float | None = None
        #: DDP wrapper -> the user's line that built it
        self.ddp: weakref.WeakKeyDictionary[nn.Module, Location | None] = weakref.WeakKeyDictionary()
        #: descriptors (op, shape, dtype, group, root, file, line) by id, and the calls in order
        self.descriptors: list[tuple[Any, ...]] = []
        self._ids: dict[tuple[Any, ...], int] = {}
        self.calls = array("I")
        #: data pointers of tensors all-reduced since the last optimizer step (gradients averaged by
        #: hand: `dist.all_reduce(p.grad)`, or `p.grad.data`, which shares the memory) -> the line
        self.reduced: dict[int, Location | None] = {}
        self._groups: dict[int, tuple[int, ...]] = {}
        self._local = threading.local()
        self._waiting: tuple[int, float] | None = None  # (index of the call, monotonic start)
        #: seconds spent in the recorded collectives so far (waiting for the other ranks, mostly)
        self.seconds = 0.0
        self._written_waiting: int | None = None
        self._watchdog: threading.Thread | None = None
        self._lock = threading.Lock()
        self.finished = False
        #: the program ended normally (not by an exception): a shorter sequence is then final
        #: (None: not known, for a rank started by fork)
        self.completed: bool | None = False
        self._forked = False
        #: where this rank stands in its job (see run/nodes/job.py)
        self.launch: Launch | None = None
        self._init_method: str | None = None
        #: rank 0's own store in a multi-node job, kept open until the other nodes' last records came
        self._held_store: Any = None
        self._awaiting = False

    # -- installation ---------------------------------------------------------------------------

    def install(self, patches: Patches) -> None:
        if not dist.is_available():
            return
        modules = [dist, dist.distributed_c10d]
        for name, shaped in COLLECTIVES.items():
            original = getattr(dist.distributed_c10d, name, None)
            if original is None:
                continue
            stand_in = observed(original, self._before(name, original, shaped), self._after, skip=_skip)
            for module in modules:
                if getattr(module, name, None) is original:
                    patches.set(module, name, stand_in)
        init = dist.distributed_c10d.init_process_group
        stand_in = observed(init, self._initialising, self._initialised, skip=_skip)
        for module in modules:
            if getattr(module, "init_process_group", None) is init:
                patches.set(module, "init_process_group", stand_in)
        ddp = nn.parallel.DistributedDataParallel
        patches.set(ddp, "__init__", observed_init(ddp.__init__, self._ddp_built))
        if dist.is_initialized():  # the program initialised torch.distributed before importing... us
            self._initialised()

    def attach(self, folder: Path | None) -> None:
        """Where the state file goes (None under `watch()`: the sequence stays in memory)."""
        self.folder = folder

    # -- events ---------------------------------------------------------------------------------

    def _initialising(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self._held_store = None  # a new process group may want the port of the store kept open
        init_method = kwargs.get("init_method", args[1] if len(args) > 1 else None)
        self._init_method = init_method if isinstance(init_method, str) else None
        timeout: Any = kwargs.get("timeout", args[2] if len(args) > 2 else None)
        if timeout is None:  # torch's defaults: 10 minutes for nccl, 30 for the others
            backend = str(kwargs.get("backend", args[0] if args else "") or "")
            default = "default_pg_nccl_timeout" if "nccl" in backend else "default_pg_timeout"
            timeout = getattr(dist.distributed_c10d, default, None)
        self.timeout = timeout.total_seconds() if hasattr(timeout, "total_seconds") else None

    def _initialised(self) -> None:
        if not dist.is_initialized():
            return
        self.rank, self.world = dist.get_rank(), dist.get_world_size()
        self.launch = launch_facts(os.environ, self._init_method)
        self.write()
        if self.rank == 0 and self.world > 1 and self.folder is not None:
            self._await_other_nodes()
        if self.world > 1:
            self._start_watchdog()
            if self._forked:
                # a rank started by fork ends with os._exit, after multiprocessing's finalizers
                # but without atexit: write its last calls then (how it ended is not known)
                from multiprocessing import util

                util.Finalize(None, self.finish, args=(None,), exitpriority=10)

    def _await_other_nodes(self) -> None:
        """Rank 0 of a job that may span nodes: wait at exit for their last records (bounded)."""
        assert self.launch is not None
        if surely_spans(self.launch, self.world) and not self.launch.agent_store and not self._shared_dir():
            try:  # the store lives in this process: keep it open past destroy_process_group
                self._held_store = dist.distributed_c10d._get_default_store()
            except Exception:  # noqa: BLE001 - a process group made from a store object: nothing to keep
                self._held_store = None
        if not self._awaiting:
            self._awaiting = True
            atexit.register(self._at_exit)

    def _shared_dir(self) -> bool:
        config = read_json(self.folder / CONFIG_FILE) if self.folder is not None else None
        return bool((config or {}).get("shared_dir"))

    def _at_exit(self) -> None:
        if self.folder is not None and self.launch is not None and self.rank == 0 and not self._forked:
            await_peers(self.folder, self.launch, self.world)
        self._held_store = None

    def _before(self, op: str, original: Callable[..., Any], shaped: str | None) -> Callable[[tuple[Any, ...], dict[str, Any]], None]:
        names = list(inspect.signature(original).parameters)
        positions = {name: names.index(name) for name in ("group", shaped, *ROOTS) if name and name in names}
        roots = [name for name in ROOTS if name in positions]

        def argument(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            if name in kwargs:
                return kwargs[name]
            index = positions.get(name)
            return args[index] if index is not None and index < len(args) else None

        def before(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
            depth = getattr(self._local, "depth", 0)
            self._local.depth = depth + 1
            if depth:
                return  # a collective made by another one (all_gather_object's all_gather)
            tensor = argument(shaped, args, kwargs) if shaped else None
            shape = dtype = None
            if isinstance(tensor, torch.Tensor):
                shape, dtype = tuple(tensor.shape), tensor.dtype
            root = None
            for name in roots:
                value = argument(name, args, kwargs)
                if value is not None:
                    root = f"{name}={value}"
                    break
            site = caller_in_user_code()
            index = self.record(op, shape, dtype, self._group(argument("group", args, kwargs)), root, site)
            self._waiting = (index, time.monotonic())
            if op == "all_reduce" and tensor is not None:
                self.reduced[tensor.data_ptr()] = site

        return before

    def _after(self) -> None:
        depth = getattr(self._local, "depth", 1) - 1
        self._local.depth = max(depth, 0)
        if depth == 0:
            if self._waiting is not None:
                self.seconds += time.monotonic() - self._waiting[1]
            self._waiting = None

    def _ddp_built(self, module: nn.Module) -> None:
        site = caller_in_user_code()
        self.ddp[module] = site
        group = getattr(module, "process_group", None)
        self.record("DistributedDataParallel", None, None, self._group(group), None, site)

    def record(self, op: str, shape: tuple[int, ...] | None, dtype: Any, group: tuple[int, ...] | None,
               root: str | None, site: Location | None) -> int:
        """Append one call to the sequence; returns its index."""
        key = (op, shape, dtype, group, root, *(site or (None, None)))
        ident = self._ids.get(key)
        if ident is None:
            ident = self._ids[key] = len(self.descriptors)
            self.descriptors.append(key)
        self.calls.append(ident)
        return len(self.calls) - 1

    def _group(self, group: Any) -> tuple[int, ...] | None:
        """The global ranks of a group (None: the default group, every rank)."""
        if group is None or group is dist.GroupMember.WORLD:
            return None
        ranks = self._groups.get(id(group))
        if ranks is None:
            try:
                ranks = tuple(dist.get_process_group_ranks(group))
            except Exception:  # noqa: BLE001 - an unusual group object: compare it as its own group
                ranks = (-1 - len(self._groups),)
            self._groups[id(group)] = ranks
        return ranks

    # -- the state file ---------------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        calls = self.calls
        start = max(0, len(calls) - WINDOW)
        window = calls[start:].tolist()
        before: dict[str, int] = {}
        for ident in calls[:start]:
            group = str(self.descriptors[ident][3])
            before[group] = before.get(group, 0) + 1
        used = sorted(set(window))
        waiting = self._waiting
        return {
            "pid": os.getpid(),
            "rank": self.rank,
            "world": self.world,
            "timeout": self.timeout,
            "start": start,
            "before": before,
            "calls": window,
            "descriptors": {str(i): _describe(self.descriptors[i]) for i in used},
            "waiting": {"index": waiting[0], "seconds": round(time.monotonic() - waiting[1], 1)} if waiting else None,
            "finished": self.finished,
            "completed": self.completed,
            "launch": self.launch.to_dict() if self.launch is not None else None,
        }

    def write(self) -> None:
        if self.folder is None or self.rank is None or self.world < 2:
            return
        path = collectives_path(self.folder, os.getpid())
        with self._lock:
            try:
                temporary = path.with_suffix(".tmp")
                temporary.write_text(json.dumps(self.state()), encoding="utf-8")
                os.replace(temporary, path)
            except (OSError, RuntimeError, ValueError):
                pass  # the run folder is gone, or the array changed while copied: the next write says it

    def finish(self, completed: bool | None) -> None:
        self.finished = True
        self.completed = completed
        self._waiting = None
        self.write()

    def _start_watchdog(self) -> None:
        if self._watchdog is not None or self.folder is None:
            return
        self._watchdog = threading.Thread(target=self._watch, name="torchdoctor-collectives", daemon=True)
        self._watchdog.start()

    def _watch(self) -> None:
        """Write the state when a collective has waited long, and again when it is over."""
        while not self.finished:
            time.sleep(TICK)
            waiting = self._waiting
            if waiting is not None and time.monotonic() - waiting[1] >= WAITING_AFTER:
                if self._written_waiting != waiting[0]:
                    self._written_waiting = waiting[0]
                    self.write()
            elif self._written_waiting is not None:
                self._written_waiting = None
                self.write()

    def after_fork(self) -> None:
        """A forked child (a DataLoader worker, or a rank started with the fork method) starts
        afresh: it is no rank until it initialises a process group of its own."""
        self.rank, self.world = None, 1
        self._forked = True
        self.launch = self._held_store = None
        self.calls = array("I")
        self._waiting = self._written_waiting = None
        self._watchdog = None


def _describe(descriptor: tuple[Any, ...]) -> list[Any]:
    """A descriptor as JSON: the dtype by its short name (`float32`)."""
    op, shape, dtype, *rest = descriptor
    return [op, shape, str(dtype).replace("torch.", "") if dtype is not None else None, *rest]


def _skip() -> bool:
    return traced()
