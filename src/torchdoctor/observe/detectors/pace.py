"""TD465, the rank's half: how long this rank's steps take, and how much of that is its own work.

In a job of two or more ranks, every optimizer step adds the time since the previous one, less
the time spent in `backward()` (where DDP waits for the other ranks' gradients) and in the
recorded collectives (instruments/distributed.py): what is left is the work no rank waits for
another in (data, forward, optimizer, the script's own code). Each step's own part is kept too
(up to MAX_STEPS of them), and its median written: work a rank does only now and then (rank 0
validating or saving a checkpoint every few hundred steps, a correct habit) does not make it a
straggler; work it does at every step does. The running totals are written
at optimizer steps 4, 8, 16, ... and at exit, as they stood at the end of the last step: what
a rank does after training (rank 0 saving a checkpoint, or waiting at exit for the other nodes'
records) is not its pace. The runner compares the ranks (run/pace.py).
Cost per step: three clock reads and a few additions; nothing at all without a process group of two.
"""

from __future__ import annotations

import socket
import statistics
import time

from torchdoctor.observe.detector import Detector
from torchdoctor.observe.events import Backward, Step
from torchdoctor.observe.instruments.distributed import DistributedIndex
from torchdoctor.observe.outcome import Outcome
from torchdoctor.rules.distributed.straggler_ranks import RULE

#: the first optimizer step counted (the first ones are slow everywhere: warm-up, allocations)
FIRST = 4
#: per-step own times kept for the median (8 bytes each)
MAX_STEPS = 100_000


class StepPace(Detector):
    ORDER = 150
    rules = (RULE,)

    def install(self) -> None:
        self.index = self.ctx.instrument(DistributedIndex)
        self._host = socket.gethostname()
        self._started: float | None = None  # at the end of step FIRST
        self._collectives = 0.0  # the index's collective seconds then
        self._backward = 0.0  # seconds in backward() since then
        self._in_backward: float | None = None
        self._last: tuple[int, float, float] | None = None  # (steps, wall, own) at the end of the latest step
        self._owns: list[float] = []  # each step's own part

    def on_backward(self, event: Backward) -> None:
        if self._started is not None:
            self._in_backward = time.perf_counter()

    def on_backward_end(self, event: Backward) -> None:
        if self._in_backward is not None:
            self._backward += time.perf_counter() - self._in_backward
            self._in_backward = None

    def on_step_end(self, event: Step) -> None:
        if self.index.world < 2 or self.ctx.folder is None:
            return
        steps = self.ctx.steps
        if steps == FIRST:
            self._started, self._collectives, self._backward = time.perf_counter(), self.index.seconds, 0.0
        elif self._started is not None:
            wall = time.perf_counter() - self._started
            own = wall - self._backward - (self.index.seconds - self._collectives)
            if len(self._owns) < MAX_STEPS:
                self._owns.append(own - (self._last[2] if self._last is not None else 0.0))
            self._last = (steps, wall, own)
            if steps & (steps - 1) == 0:
                self._write()

    def on_finish(self, outcome: Outcome) -> None:
        if self._last is not None and self._last[0] & (self._last[0] - 1) != 0:  # not written at that step already
            self._write()

    def _write(self) -> None:
        assert self._last is not None
        steps, wall, own = self._last
        self.ctx.record({"type": "pace", "host": self._host, "first": FIRST, "steps": steps, "wall": wall, "own": own,
                         "own_median": statistics.median(self._owns) if self._owns else own / max(steps - FIRST, 1)})
