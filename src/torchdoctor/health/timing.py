"""Timings the check compares, taken so that a busy machine does not change what they say.

Three rules. Timed work runs on one torch thread (`one_thread()`): with several, every
parallel operation waits for all its threads, and on a machine whose cores are busy a thread
waits for a core for milliseconds (a tiny training step with torch's two threads and every
core busy: 0.06 ms at best, over 100 ms typically; on one thread, 0.06 ms either way). Each
time is the fastest of several runs: a busy machine only ever adds time, so the fastest run
is the work's own cost. And a threshold is a ratio to a time measured beside it in this
process, never a number of seconds:
`reference_seconds()` times a fixed piece of work of the kind a DataLoader does (building and
stacking small tensors in Python), so "more than 200 times the reference work" means the same
on an idle and on a busy machine where "more than 10 ms" does not.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import torch


@contextmanager
def one_thread() -> Iterator[None]:
    """torch on one intra-op thread while timing (the caller's setting is put back)."""
    threads = torch.get_num_threads()
    if threads != 1:
        torch.set_num_threads(1)
    try:
        yield
    finally:
        if threads != 1:
            torch.set_num_threads(threads)


def fastest_seconds(work: Callable[[], object], repeats: int, warmup: int = 1) -> float:
    """The fastest wall time of `repeats` calls of `work`, after `warmup` untimed ones."""
    for _ in range(warmup):
        work()
    fastest = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        work()
        fastest = min(fastest, time.perf_counter() - started)
    return fastest


def _reference_work() -> None:
    samples = [torch.full((16,), float(i)) for i in range(32)]
    torch.stack(samples).sum()


def reference_seconds(repeats: int = 7) -> float:
    """The time of the reference work in this process now (about 0.04 ms on an idle machine)."""
    with torch.no_grad(), one_thread():
        return fastest_seconds(_reference_work, repeats)
