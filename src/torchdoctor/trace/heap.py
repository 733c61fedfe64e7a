"""After the trace, the heap stays as large as tracing made it (glibc only).

The profiler's buffers and the trace's analysis are freed when the trace ends, and glibc's
malloc then gives the top of its heap back to the system at every free that leaves more than
its trim threshold there. The training's per-step tensors come to sit at that top: each step
grows the heap again and faults its pages back in (seen on torch 2.13: about 3,000 page faults
per step after a trace of a small CNN, none before it, steps 1.4x slower). Raising the trim
threshold to the heap's size keeps what the process already held while tracing, and the steps
after the trace run as before it (bench/trace_bench.py). Elsewhere (macOS, musl) nothing is done.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

#: mallopt's parameter for the trim threshold (malloc.h)
M_TRIM_THRESHOLD = -1


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]


def keep_heap() -> int | None:
    """Raise glibc's trim threshold to the main heap's size; the threshold set, or None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallinfo2 = libc.mallinfo2  # glibc 2.33 and later
    except (OSError, AttributeError):
        return None
    mallinfo2.restype = _MallInfo2
    size = int(mallinfo2().arena)
    if size <= 0 or not libc.mallopt(M_TRIM_THRESHOLD, min(size, 2**31 - 1)):
        return None
    return size
