""""Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False":
the checkpoint's device and why this machine lacks it, read from `torch.load`'s own frames (the
`location` its restore step validated, the `f` and `map_location` it was called with)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from torchdoctor.observe.crash.describe import torch_module
from torchdoctor.observe.crash.explain import Explanation
from torchdoctor.observe.crash.model import Crash
from torchdoctor.rules.device.checkpoint_device_missing import RULE

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Holdings

_MESSAGE = "Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False"


def checkpoint_device_missing(crash: Crash, session: Holdings | None) -> Explanation | None:
    torch = torch_module()
    if torch is None or crash.exc_type != "RuntimeError" or _MESSAGE not in crash.message:
        return None
    load = next((f for f in reversed(crash.frames) if f.function == "load" and "map_location" in f.locals), None)
    restored = next((f for f in reversed(crash.frames) if isinstance(f.locals.get("location"), str)), None)
    if load is None or restored is None:
        return None
    fields = {"source": _source(load.locals.get("f")), "why": _why(torch)}
    mapped = load.locals.get("map_location")
    if mapped is None:
        return Explanation(RULE, fields | {"location": restored.locals["location"]})
    return Explanation(RULE, fields | {"mapped": repr(mapped)}, variant="mapped")


def _source(given: Any) -> str:
    """`'model.pt'`, or the name of the file object or buffer it read."""
    if isinstance(given, (str, os.PathLike)):
        return f"`{os.fspath(given)}`"
    name = getattr(given, "name", None)
    return f"`{name}`" if isinstance(name, str) else f"a {type(given).__name__}"


def _why(torch: Any) -> str:
    """Why CUDA is absent: a CPU-only build, or a CUDA build that finds no GPU."""
    if getattr(torch.version, "cuda", None) is None:
        return f"this torch ({torch.__version__}) is a CPU-only build"
    return f"this CUDA build of torch ({torch.__version__}) finds no GPU on this machine"


ORDER = 66
EXPLAINERS = (checkpoint_device_missing,)
