"""What `torchdoctor trace` asks of the traced process (written into the run folder's config).

No torch here.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

#: the config key the runner writes and the traced process reads
CONFIG_KEY = "trace"
#: the detector the traced process adds to run's (module:Class, see run/boot.py)
TRACER = "torchdoctor.trace.tracer:StepTracer"
#: the profiler range that wraps a user line's torch calls: `PREFIX + "train.py:42"`
LINE_PREFIX = "line "
#: the range around torch calls torchdoctor's own detectors make inside a traced step
OWN = "torchdoctor (observing)"
#: zero-length ranges that mark where each traced step ends
STEP_PREFIX = "torchdoctor step "
#: the suffix of a line's range around a torch.compile'd call (its ops run unmarked inside)
COMPILED_SUFFIX = " [compiled]"


@dataclass(frozen=True)
class TraceOptions:
    #: steps traced (optimizer steps of the first optimizer that steps; backward() calls
    #: when the script updates its weights by hand)
    steps: int = 5
    #: steps run before tracing starts (at least 1: the trace starts where a step ends):
    #: first-step costs (allocation, lazy modules, cudnn autotuning) and torchdoctor's own
    #: warm-up are left out
    skip: int = 3
    #: end the script once the traced steps are done (otherwise it runs on, unobserved by trace)
    stop: bool = False
    #: where to write the Chrome trace (Perfetto, chrome://tracing)
    chrome: str | None = None
    #: user lines (`train.py:42`) and ops (`aten::mm`) to show the whole op path for
    lines: tuple[str, ...] = field(default_factory=tuple)
    ops: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["lines"], data["ops"] = list(self.lines), list(self.ops)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> TraceOptions:
        data = data or {}
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        for key in ("lines", "ops"):
            if key in known:
                known[key] = tuple(known[key] or ())
        return cls(**known)
