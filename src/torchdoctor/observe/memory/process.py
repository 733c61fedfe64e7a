"""Cheap signals read every step: the process's resident memory, the CUDA caching allocator's numbers.

Neither changes anything: resident memory is one read of /proc/self/statm, the allocator's
numbers one call that copies its counters (`torch.cuda.memory_stats` without the dict building,
no synchronisation, no allocation, never `empty_cache()` or a peak reset, and only once the
program itself has initialised CUDA). Tests inject allocator facts (`use_allocator`, or the
TORCHDOCTOR_CUDA_FACTS file under `torchdoctor run`): this machine has no GPU.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: a JSON file of allocator facts to use instead of the real allocator's (tests of the CUDA path)
ENV_CUDA_FACTS = "TORCHDOCTOR_CUDA_FACTS"
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


@dataclass(frozen=True)
class AllocatorFacts:
    """One CUDA device's caching allocator, in bytes."""

    device: str  # "cuda:0"
    allocated: int  # in tensors now
    reserved: int  # held by the allocator (allocated + cached)
    peak: int  # the most ever allocated at once (this process; never reset by torchdoctor)
    inactive_split: int = 0  # cached in blocks that are split: free, but in pieces (fragmentation)
    total: int | None = None  # the device's memory, when known

    @property
    def cached(self) -> int:
        return max(self.reserved - self.allocated, 0)

    def to_dict(self) -> dict[str, Any]:
        return {"device": self.device, "allocated": self.allocated, "reserved": self.reserved, "peak": self.peak,
                "inactive_split": self.inactive_split, "total": self.total}


AllocatorSource = Callable[[], list[AllocatorFacts]]
_source: AllocatorSource | None = None


def use_allocator(source: AllocatorSource | None) -> None:
    """Read allocator facts from `source` instead of torch.cuda (tests; None: the real one)."""
    global _source
    _source = source


def allocators() -> list[AllocatorFacts]:
    """The facts of every CUDA device the program has used (none when CUDA is not initialised)."""
    if _source is not None:
        return _source()
    injected = os.environ.get(ENV_CUDA_FACTS)
    if injected:
        return _from_file(injected)
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available() or not torch.cuda.is_initialized():
        return []
    found = []
    for index in range(torch.cuda.device_count()):
        stats = torch._C._cuda_memoryStats(index)
        allocated = _current(stats, "allocated_bytes")
        reserved = _current(stats, "reserved_bytes")
        if not reserved:
            continue  # a device the program never allocated on
        found.append(AllocatorFacts(f"cuda:{index}", allocated, reserved, _peak(stats, "allocated_bytes"),
                                    _current(stats, "inactive_split_bytes")))
    return found


def _current(stats: Any, name: str) -> int:
    try:
        return int(stats[name]["all"]["current"])
    except (KeyError, TypeError):
        return 0


def _peak(stats: Any, name: str) -> int:
    try:
        return int(stats[name]["all"]["peak"])
    except (KeyError, TypeError):
        return 0


def _from_file(path: str) -> list[AllocatorFacts]:
    """Injected facts: a list of dicts, or a dict of lists (one entry per read, the last repeats)."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return []
    if isinstance(data, dict) and "sequence" in data:
        reads = data["sequence"]
        count = _from_file.calls = getattr(_from_file, "calls", 0) + 1  # type: ignore[attr-defined]
        data = reads[min(count - 1, len(reads) - 1)] if reads else []
    return [AllocatorFacts(**entry) for entry in data if isinstance(entry, dict)]


class Resident:
    """The process's resident memory (RSS), from /proc/self/statm (None elsewhere)."""

    def __init__(self) -> None:
        self._fd: int | None = None
        self._pid = -1

    def read(self) -> int | None:
        if os.getpid() != self._pid:  # a forked child reads its own file
            self.close()
            try:
                self._fd = os.open("/proc/self/statm", os.O_RDONLY)
            except OSError:
                self._fd = None
            self._pid = os.getpid()
        if self._fd is None:
            return None
        try:
            fields = os.pread(self._fd, 128, 0).split()
            return int(fields[1]) * _PAGE
        except (OSError, IndexError, ValueError):
            return None

    def close(self) -> None:
        if self._fd is not None and self._pid == os.getpid():
            try:
                os.close(self._fd)
            except OSError:
                pass
        self._fd = None


_STATUS_FIELD = re.compile(r"^(\w+):\s+(\d+) kB", re.MULTILINE)


def status(pid: int | str = "self") -> dict[str, int]:
    """Memory fields of /proc/PID/status in bytes (VmRSS, VmData, VmHWM, ...); {} elsewhere."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return {}
    return {name: int(value) * 1024 for name, value in _STATUS_FIELD.findall(text)}


def private_dirty(pid: int | str) -> int | None:
    """Bytes a process has written to privately (copied-on-write pages count here): the memory
    a forked DataLoader worker does not share with its parent."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="ascii", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return None
    found = re.search(r"^Private_Dirty:\s+(\d+) kB", text, re.MULTILINE)
    return int(found.group(1)) * 1024 if found else None


def available() -> int | None:
    """MemAvailable from /proc/meminfo (bytes), or None."""
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            text = handle.read()
    except OSError:
        return None
    found = re.search(r"^MemAvailable:\s+(\d+) kB", text, re.MULTILINE)
    return int(found.group(1)) * 1024 if found else None
