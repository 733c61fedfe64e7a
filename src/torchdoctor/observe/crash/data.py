"""Crashes of the data pipeline: workers killed by a signal, functions workers cannot receive,
samples that cannot be batched, a `TensorDataset` of tensors of different lengths."""

from __future__ import annotations

import ast
import contextlib
import os
import re
import signal as signal_module
import time
from typing import TYPE_CHECKING, Any

from torchdoctor.core.locate import is_user_file
from torchdoctor.introspect.source import module_tree, own_nodes, scope_of
from torchdoctor.observe.crash.describe import function_label, line_nodes, picklable, resolve, size_text, torch_module
from torchdoctor.observe.crash.explain import Explanation
from torchdoctor.observe.crash.model import Crash
from torchdoctor.observe.crash.provenance import crashes_at
from torchdoctor.observe.events import Location
from torchdoctor.rules.data.dataloader_worker_killed import RULE as WORKER_KILLED
from torchdoctor.rules.data.dataset_tensors_differ_in_length import RULE as LENGTHS_DIFFER
from torchdoctor.rules.data.loader_unpacked_without_enumerate import RULE as NO_ENUMERATE
from torchdoctor.rules.data.sample_not_batchable import RULE as NOT_BATCHABLE
from torchdoctor.rules.data.samples_differ_in_size import RULE as DIFFERENT_SIZES
from torchdoctor.rules.data.unpicklable_worker_function import RULE as UNPICKLABLE

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Holdings

_KILLED = re.compile(r"DataLoader worker \(pid (?P<pid>\d+)\) is killed by signal: (?P<signal>[^.]+)\.")
_EXITED = re.compile(r"DataLoader worker \(pid\(s\) [\d, ]+\) exited unexpectedly")
#: what reading a batch raises when the worker died in the middle of sending it
_PIPE_ERRORS = ("ConnectionResetError", "EOFError", "BrokenPipeError")
_STACK = re.compile(r"stack expects each tensor to be equal size, but got \[(?P<first>[^\]]*)\] at entry (?P<i>\d+) "
                    r"and \[(?P<second>[^\]]*)\] at entry (?P<j>\d+)")
_PICKLE = re.compile(r"Can't (?:pickle|get) (?:local object )?'?(?P<what><[^>]+>|[\w.<>]+)'?")
SHM = "/dev/shm"
#: seconds to wait for a worker whose pipe broke to be reaped, so its exit code can be read
REAP_WAIT = 2.0


def worker_killed(crash: Crash, session: Holdings | None) -> Explanation | None:
    match = _KILLED.search(crash.message)
    if match is not None:
        pid, signal = match["pid"], match["signal"].strip()
    else:  # the loader noticed the dead worker (or lost its pipe) before its SIGCHLD handler said which signal
        lost = _EXITED.search(crash.message) or crash.exc_type in _PIPE_ERRORS
        found = _killed_worker(crash) if lost else None
        if found is None:
            return None
        pid, signal = found
    if signal.lower().startswith("bus"):
        return Explanation(WORKER_KILLED, {"pid": pid, "shm": _shared_memory()}, variant="bus-error")
    if signal.lower().startswith("kill"):
        return Explanation(WORKER_KILLED, {"pid": pid}, variant="out-of-memory")
    return Explanation(WORKER_KILLED, {"pid": pid, "signal": signal})


def _killed_worker(crash: Crash) -> tuple[str, str] | None:
    """(pid, signal name) of a worker that a signal ended, read from the loader iterator in the
    crash's live frames (`exitcode` is minus the signal number).

    The loader can lose a worker's pipe while the dying worker is not yet reaped (its exit code
    still None), so the workers are polled for up to `REAP_WAIT` seconds; if the loader's own
    SIGCHLD handler speaks first, its "is killed by signal" error is read instead."""
    workers = [w for frame in crash.frames for w in getattr(frame.locals.get("self"), "_workers", None) or ()]
    if not workers:
        return None
    deadline = time.monotonic() + REAP_WAIT
    try:
        while True:
            for worker in workers:
                code = getattr(worker, "exitcode", None)
                if isinstance(code, int) and code < 0:
                    with contextlib.suppress(ValueError):
                        return str(worker.pid), signal_module.strsignal(-code) or f"signal {-code}"
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.05)
    except RuntimeError as handler_said:  # torch's SIGCHLD handler, raised during the wait
        match = _KILLED.search(str(handler_said))
        return (match["pid"], match["signal"].strip()) if match else None


def unpicklable(crash: Crash, session: Holdings | None) -> Explanation | None:
    if crash.exc_type not in ("PicklingError", "AttributeError", "TypeError") or not ("pickle" in crash.message or "local object" in crash.message):
        return None
    loader = _loader(crash)
    if loader is None:
        return None
    for argument in ("collate_fn", "worker_init_fn", "dataset", "sampler", "batch_sampler"):
        value = getattr(loader, argument, None)
        if value is None or picklable(value):
            continue
        what = function_label(value)
        code = getattr(value, "__code__", None)
        at = (code.co_filename, code.co_firstlineno) if code is not None and not code.co_filename.startswith("<") else None
        return Explanation(UNPICKLABLE, {"argument": argument, "what": what}, at=at)
    return None


def _loader(crash: Crash) -> Any:
    torch = torch_module()
    if torch is None:
        return None
    from torch.utils.data import DataLoader

    return crash.find_local(DataLoader)


def _dataset(crash: Crash) -> Any:
    """The Dataset being batched: the loader iterator's or the fetcher's, in the live frames."""
    for frame in crash.deepest():
        owner = frame.locals.get("self")
        for attribute in ("_dataset", "dataset"):
            dataset = getattr(owner, attribute, None)
            if dataset is not None and hasattr(type(dataset), "__getitem__"):
                return dataset
    return None


def _shared_memory() -> str:
    try:
        stats = os.statvfs(SHM)
    except (OSError, AttributeError):
        return ""
    return f" is {size_text(stats.f_blocks * stats.f_frsize)} here"


def samples_differ(crash: Crash, session: Holdings | None) -> Explanation | None:
    """The default collate's `torch.stack` over samples of different shapes."""
    match = _STACK.search(crash.message)
    if match is None or not any(frame.file.replace("\\", "/").endswith("utils/data/_utils/collate.py") for frame in crash.frames):
        return None
    dataset = _dataset(crash)
    named = f", from {type(dataset).__name__}" if dataset is not None else ""
    return Explanation(DIFFERENT_SIZES, {"first": f"[{match['first']}]", "second": f"[{match['second']}]",
                                         "i": match["i"], "j": match["j"], "dataset": named})


_NOT_BATCHABLE = re.compile(r"default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found <class '(?P<type>[\w.]+)'>")


def sample_not_batchable(crash: Crash, session: Holdings | None) -> Explanation | None:
    """The default collate given a sample of a type it cannot batch (a PIL image: no `ToTensor()`)."""
    match = _NOT_BATCHABLE.search(crash.message) if crash.exc_type == "TypeError" else None
    if match is None:
        return None
    found = match["type"]
    dataset = _dataset(crash)
    returned = _return_line(dataset) if dataset is not None else None
    fields = {"source": f"`{type(dataset).__name__}.__getitem__`" if dataset is not None else "The dataset",
              "found": found.rsplit(".", 1)[-1], "crashed": crashes_at(crash) if returned is not None else ""}
    if found.startswith("PIL."):
        return Explanation(NOT_BATCHABLE, {k: v for k, v in fields.items() if k != "found"}, at=returned, variant="image")
    return Explanation(NOT_BATCHABLE, fields, at=returned)


def _return_line(dataset: Any) -> Location | None:
    """The line of the one `return` of the dataset class's `__getitem__`, in the user's code."""
    function = getattr(type(dataset), "__getitem__", None)
    code = getattr(function, "__code__", None)
    tree = module_tree(code.co_filename) if code is not None and is_user_file(code.co_filename) else None
    scope = scope_of(tree, code) if tree is not None and code is not None else None
    returns = [node for node in own_nodes(scope) if isinstance(node, ast.Return)] if scope is not None else []
    return (code.co_filename, returns[0].lineno) if len(returns) == 1 and code is not None else None


_UNPACK = re.compile(r"(too many|not enough) values to unpack \(expected (?P<expected>\d+)")


def loader_unpacked_without_enumerate(crash: Crash, session: Holdings | None) -> Explanation | None:
    """`for i, (x, y) in loader:` over a DataLoader: each batch unpacked as (index, batch)."""
    frame = crash.user_frame()
    torch = torch_module()
    if crash.exc_type != "ValueError" or not _UNPACK.search(crash.message) or frame is None or torch is None:
        return None
    loops = [n for n in line_nodes(frame) if isinstance(n, (ast.For, ast.AsyncFor))]
    if len(loops) != 1:
        return None
    loop = loops[0]
    target, source = loop.target, loop.iter
    if not (isinstance(target, ast.Tuple) and len(target.elts) == 2 and isinstance(target.elts[1], ast.Tuple)
            and isinstance(target.elts[0], ast.Name) and isinstance(source, ast.Name)):
        return None
    loader = resolve(source, frame)
    if not isinstance(loader, torch.utils.data.DataLoader):
        return None
    return Explanation(NO_ENUMERATE, {"target": ", ".join(ast.unparse(name) for name in target.elts), "loader": source.id,
                                      "first": ast.unparse(target.elts[0]), "inner": ast.unparse(target.elts[1])})


#: where these explainers are tried: lower first (core/plugins.py)
def tensor_dataset_lengths(crash: Crash, session: Holdings | None) -> Explanation | None:
    """`TensorDataset(x, y)` of tensors with different first dimensions ("Size mismatch between
    tensors"): each argument of the user's call, named, with its shape."""
    torch = torch_module()
    frame = crash.user_frame()
    if torch is None or frame is None or crash.exc_type != "AssertionError" or "Size mismatch between tensors" not in crash.message:
        return None
    dataset = next((f for f in reversed(crash.frames) if f.function == "__init__"
                    and isinstance(f.locals.get("self"), torch.utils.data.TensorDataset)), None)
    given = dataset.locals.get("tensors") if dataset is not None else None
    calls = [n for n in line_nodes(frame) if isinstance(n, ast.Call) and len(n.args) == len(given or ()) and not n.keywords]
    if not given or len(calls) != 1:
        return None
    names = [f"`{ast.unparse(arg)}`" if resolve(arg, frame) is tensor else f"tensor {i}"
             for i, (arg, tensor) in enumerate(zip(calls[0].args, given))]
    lengths = ", ".join(f"{name} has {len(tensor)} ({list(tensor.shape)})" for name, tensor in zip(names, given))
    return Explanation(LENGTHS_DIFFER, {"lengths": lengths})


ORDER = 40
EXPLAINERS = (worker_killed, unpicklable, samples_differ, sample_not_batchable, loader_unpacked_without_enumerate,
              tensor_dataset_lengths)
