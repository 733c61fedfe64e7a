"""Reading a running frame's variables without keeping them alive.

On Python 3.12 and earlier, `frame.f_locals` of a function frame copies its variables into a
dict the frame keeps until the next read: every value read stays referenced by that snapshot
after the function drops it (`del x`, or `x` rebound at the next iteration of the loop), so an
observer that reads a training loop's frame would keep the previous batch, or a tensor the
user deleted, alive. `read_locals` hands back a copy and empties the frame's snapshot (the
next `locals()` or `f_locals` rebuilds it from the live variables). From Python 3.13 on,
`f_locals` is a live view with no snapshot (PEP 667) and is only copied.
"""

from __future__ import annotations

import inspect
from types import FrameType
from typing import Any


def read_locals(frame: FrameType) -> dict[str, Any]:
    """A copy of the frame's variables (a module or class body: its namespace, copied)."""
    namespace = frame.f_locals
    copied = dict(namespace)
    optimized = bool(frame.f_code.co_flags & inspect.CO_OPTIMIZED)
    if optimized and type(namespace) is dict and namespace is not frame.f_globals:
        namespace.clear()  # the snapshot only: the frame's variables are untouched
    return copied
