"""The process's memory account, shared by the memory detectors (`ctx.instrument(MemoryState)`):
the census timeline, its listeners, the allocators seen. The detector that takes the censuses
is detectors/memory_account.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torchdoctor.observe.instruments.modules import SpanRecorder
from torchdoctor.observe.memory import census as censuses
from torchdoctor.observe.memory.census import Census, Sources
from torchdoctor.observe.memory.process import AllocatorFacts
from torchdoctor.observe.memory.timeline import Timeline
from torchdoctor.observe.patching import Patches

#: steps with a census at the end of each phase and the activations by module: the warm-up,
#: while the global module hooks that name the modules are on anyway (Session.WARMUP_STEPS)
FULL_STEPS = 3
#: memory grown since the last census that calls for a census now (bytes, and fraction)
GROWTH = 64 * 2**20
GROWTH_FRACTION = 0.10

Listener = Callable[[Census], None]


class MemoryState:
    """The process's memory account, shared by the memory detectors (`ctx.instrument(MemoryState)`)."""

    def __init__(self) -> None:
        self.timeline = Timeline()
        self.listeners: list[Listener] = []
        self.allocators: list[AllocatorFacts] = []
        #: local names that held the batch in every full census (a later census counts them as batch)
        self.batch_names: set[str] | None = None
        self.sources: Callable[..., Sources] | None = None
        self.recorder: SpanRecorder | None = None
        #: the last recorder stopped: its spans name the modules of the last recorded forward's graph
        self.last_recorder: SpanRecorder | None = None

    def install(self, patches: Patches) -> None:
        """Nothing to patch: the account is taken from the detectors' events."""

    def take(self, step: int, phase: str, full: bool, **extra: Any) -> Census | None:
        """A census now (None when no session gave its sources)."""
        if self.sources is None:
            return None
        sources = self.sources(**extra)
        census = censuses.take(step, phase, sources)
        self.timeline.census(census, full)
        for listener in list(self.listeners):
            listener(census)
        return census

    def summary(self) -> dict[str, Any]:
        data = self.timeline.summary()
        data["allocators"] = [facts.to_dict() for facts in self.allocators]
        return data
