"""A crash as explainers see it: exception type, message, frames, and live locals when we have them.

An exception raised in this process is live: its frames still hold their locals (the tensors
and modules of the failing call), which lets explanations name things. An exception raised
in a DataLoader worker or a `torch.multiprocessing.spawn` child reaches this process only as
traceback text inside another exception's message; it is parsed back into the same shape,
without locals.
"""

from __future__ import annotations

import re
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import FrameType, TracebackType
from typing import Any

from torchdoctor.core.locate import is_own_file, is_user_file
from torchdoctor.observe.faults import is_pass_through
from torchdoctor.observe.patching import is_stand_in_frame

_FRAME = re.compile(r'^\s*File "(?P<file>.+)", line (?P<line>\d+), in (?P<function>.+)$')
_EXCEPTION = re.compile(r"^(?P<type>[A-Za-z_][\w.]*)(?::\s?(?P<message>.*))?$")
_WORKER = re.compile(r"Caught (?P<type>\w+) in DataLoader worker process (?P<worker>\d+)\.")
_SPAWNED = re.compile(r"-- Process (?P<index>\d+) terminated with the following error:")


@dataclass(frozen=True)
class Frame:
    file: str
    line: int
    function: str
    live: FrameType | None = None  # the frame object, with its locals (this process only)
    lasti: int = -1  # the instruction that was running (the call that raised), when live

    @property
    def locals(self) -> dict[str, Any]:
        return dict(self.live.f_locals) if self.live is not None else {}


@dataclass(frozen=True)
class Crash:
    """One exception: `frames` outermost first; `origin` says where it was raised."""

    exc_type: str
    message: str
    frames: tuple[Frame, ...]
    exception: BaseException | None = None
    origin: str = ""  # "" (this process), "DataLoader worker 0", "process 1"
    rank: int | None = None
    causes: tuple[Crash, ...] = field(default=(), compare=False)

    @classmethod
    def from_exception(cls, exception: BaseException) -> Crash:
        causes: list[Crash] = []
        seen = {id(exception)}
        link = exception.__cause__ or exception.__context__
        while link is not None and id(link) not in seen and len(causes) < 5:
            seen.add(id(link))
            causes.append(cls(type(link).__name__, str(link), _frames(link.__traceback__), link))
            link = link.__cause__ or link.__context__
        return cls(type(exception).__name__, str(exception), _frames(exception.__traceback__), exception, causes=tuple(causes))

    @classmethod
    def from_text(cls, text: str, origin: str = "", rank: int | None = None) -> Crash | None:
        """Parse a formatted traceback ("Traceback (most recent call last): ..." and what follows)."""
        lines = text.splitlines()
        start = next((i for i, line in enumerate(lines) if line.rstrip().endswith("Traceback (most recent call last):")), None)
        if start is None:
            return None
        frames: list[Frame] = []
        index = start + 1
        while index < len(lines):
            match = _FRAME.match(lines[index])
            if match:
                frames.append(Frame(match["file"], int(match["line"]), match["function"].strip()))
                index += 1
            elif lines[index].startswith((" ", "\t")) or not lines[index].strip():
                index += 1  # a source line, a caret line or a blank line
            else:
                break
        if index >= len(lines):
            return None
        header = _EXCEPTION.match(lines[index].strip())
        if header is None:
            return None
        message = "\n".join([header["message"] or "", *lines[index + 1 :]]).strip()
        return cls(header["type"].split(".")[-1], message, tuple(frames), origin=origin, rank=rank)

    def inner(self) -> Crash | None:
        """The exception a worker raised, when this one only carries it in its message."""
        worker = _WORKER.search(self.message)
        if worker:
            return Crash.from_text(self.message[worker.end():], origin=f"DataLoader worker {worker['worker']}")
        spawned = _SPAWNED.search(self.message)
        if spawned:
            index = int(spawned["index"])
            return Crash.from_text(self.message[spawned.end():], origin=f"process {index}", rank=index)
        return None

    @property
    def traceback_text(self) -> str:
        """The formatted traceback of a live exception ("" for one parsed from text)."""
        if self.exception is None:
            return ""
        return "".join(traceback.format_exception(type(self.exception), self.exception, self.exception.__traceback__))

    @property
    def first_line(self) -> str:
        return self.message.strip().splitlines()[0] if self.message.strip() else ""

    @property
    def headline(self) -> str:
        """`RuntimeError: first line of the message` (cut to a readable length)."""
        text = f"{self.exc_type}: {self.first_line}" if self.first_line else self.exc_type
        return text if len(text) <= 160 else text[:157] + "..."

    def user_frame(self) -> Frame | None:
        """The innermost frame in the user's own code."""
        found = None
        for frame in self.frames:
            if is_user_file(frame.file):
                found = frame
        return found

    def own_frame(self) -> Frame | None:
        """torchdoctor's frame that raised this, when it is torchdoctor's fault: walking out
        from where it was raised, past torch and library frames, the first frame that is not
        a library's is torchdoctor's own (not a stand-in that only passed the user's call on)."""
        for frame in self.deepest():
            if is_user_file(frame.file):
                return None
            if is_own_file(frame.file):
                if frame.live is not None and is_pass_through(frame.live.f_code):
                    return None
                return frame
        return None

    def deepest(self) -> Iterator[Frame]:
        """Frames innermost first (where the failing call's own locals are)."""
        return reversed(self.frames)

    def find_local(self, kind: type, name: str | None = None) -> Any:
        """The innermost local of type `kind` (named `name`, if given) in the live frames."""
        for frame in self.deepest():
            for key, value in frame.locals.items():
                if isinstance(value, kind) and (name is None or key == name):
                    return value
        return None


def _frames(tb: TracebackType | None) -> tuple[Frame, ...]:
    frames: list[Frame] = []
    while tb is not None:
        code = tb.tb_frame.f_code
        if not is_stand_in_frame(code):
            frames.append(Frame(code.co_filename, tb.tb_lineno, code.co_name, tb.tb_frame, tb.tb_lasti))
        tb = tb.tb_next
    return tuple(frames)
