"""TD465, the rank's half: how long this rank's steps take, and how much of that is its own work.

In a job of two or more ranks, every optimizer step adds the time since the previous one, less
the time spent in `backward()` (where DDP waits for the other ranks' gradients) and in the
recorded collectives (instruments/distributed.py): what is left is the work no rank waits for
another in (data, forward, optimizer, the script's own code). The running totals are written
at optimizer steps 4, 8, 16, ... and at exit; the runner compares the ranks (run/pace.py).
Cost per step: two clock reads and an addition; nothing at all without a process group of two.
"""

from __future__ import annotations

import socket
import time

from torchdoctor.rules.distributed.straggler_ranks import RULE
from torchdoctor.run.detector import Detector
from torchdoctor.run.events import Backward, Step
from torchdoctor.run.instruments.distributed import DistributedIndex
from torchdoctor.run.outcome import Outcome

#: the first optimizer step counted (the first ones are slow everywhere: warm-up, allocations)
FIRST = 4


class StepPace(Detector):
    rules = (RULE,)

    def install(self) -> None:
        self.index = self.ctx.instrument(DistributedIndex)
        self._host = socket.gethostname()
        self._started: float | None = None  # at the end of step FIRST
        self._collectives = 0.0  # the index's collective seconds then
        self._backward = 0.0  # seconds in backward() since then
        self._in_backward: float | None = None

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
        elif self._started is not None and steps & (steps - 1) == 0:
            self._write(steps)

    def on_finish(self, outcome: Outcome) -> None:
        if self._started is not None and self.ctx.steps > FIRST:
            self._write(self.ctx.steps)

    def _write(self, steps: int) -> None:
        assert self._started is not None
        wall = time.perf_counter() - self._started
        own = wall - self._backward - (self.index.seconds - self._collectives)
        self.ctx.record({"type": "pace", "host": self._host, "first": FIRST, "steps": steps, "wall": wall, "own": own})
