"""TD461 and TD462, the rank's half: keep the sequence of collectives and hand it to the runner.

The recording itself is `instruments/distributed.py` (a stand-in per collective that appends
to an array); this detector switches it on, tells it where the run folder is, and writes the
final sequence at exit. The runner compares the ranks (run/ranks.py). A collective that fails
because the other ranks never joined is explained by `crash/distributed.py` (TD462).
"""

from __future__ import annotations

from torchdoctor.observe.detector import Detector
from torchdoctor.observe.instruments.distributed import DistributedIndex
from torchdoctor.observe.outcome import Outcome
from torchdoctor.rules.distributed.collective_timed_out import RULE as TIMED_OUT
from torchdoctor.rules.distributed.collectives_out_of_order import RULE as OUT_OF_ORDER


class CollectiveSequence(Detector):
    ORDER = 140
    rules = (OUT_OF_ORDER, TIMED_OUT)

    def install(self) -> None:
        self.index = self.ctx.instrument(DistributedIndex)
        self.index.attach(self.ctx.folder)

    def on_finish(self, outcome: Outcome) -> None:
        self.index.finish(completed=outcome.completed)
