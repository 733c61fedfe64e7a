"""Crashes about what a module is called with: a NumPy array, a list of numbers, a whole batch.

torch's message names an aten function and a type ("linear(): argument 'input' (position 1)
must be Tensor, not numpy.ndarray"); the live frames name the module whose forward got the
value and the user's line that passed it (the outermost user frame holding that very object).
"""

from __future__ import annotations

import re
import sys
from typing import TYPE_CHECKING, Any

from torchdoctor.core.locate import is_user_file
from torchdoctor.observe.crash.describe import module_label, torch_module
from torchdoctor.observe.crash.explain import Explanation
from torchdoctor.observe.crash.model import Crash, Frame
from torchdoctor.rules.api.non_tensor_into_module import RULE as NON_TENSOR

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Holdings

_REFUSED = re.compile(
    r"\(\): argument '\w+' \(position \d+\) must be Tensor, not (?P<type>[\w.]+)"
    r"|\(\) received an invalid combination of arguments - got \((?P<first>[\w.]+),"
    r"|'(?P<attr>numpy\.ndarray|list|tuple)' object has no attribute"
)
_KINDS = ("ndarray", "list", "tuple")
#: NumPy dtypes a layer's float32 weights need converted (ints stay: they may be class indices)
_TO_FLOAT = frozenset({"float64", "float16", "uint8", "bool"})


def non_tensor_into_module(crash: Crash, session: Holdings | None) -> Explanation | None:
    if crash.exc_type not in ("TypeError", "AttributeError"):
        return None
    match = _REFUSED.search(crash.message)
    torch = torch_module()
    if match is None or torch is None:
        return None
    said = (match["type"] or match["first"] or match["attr"]).rsplit(".", 1)[-1]
    if said not in _KINDS:
        return None
    called = _called_with(crash, torch)
    if called is None:
        return None
    module, value = called
    if type(value).__name__ != said:
        return None
    entry = _entry(crash, value)
    if entry is None:
        return None
    frame, name = entry
    fields: dict[str, Any] = {"layer": module_label(module, session), "name": name}
    at = (frame.file, frame.line)
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(value, numpy.ndarray):
        dtype = str(value.dtype)
        return Explanation(NON_TENSOR, fields | {"dtype": dtype, "shape": list(value.shape),
                                                 "conversion": ".float()" if dtype in _TO_FLOAT else ""}, at=at)
    if not isinstance(value, (list, tuple)) or not value:
        return None
    container = type(value).__name__
    if all(isinstance(item, torch.Tensor) for item in value):
        loaded = session is not None and bool(session.loaders.recent)  # a DataLoader's batch, (inputs, labels)
        return Explanation(NON_TENSOR, fields | {"container": container, "count": len(value),
                                                 "shapes": ", ".join(str(list(item.shape)) for item in value)},
                           at=at, variant="batch" if loaded else "tensors")
    if _numbers(value):
        return Explanation(NON_TENSOR, fields | {"container": container}, at=at, variant="list")
    return None


def _called_with(crash: Crash, torch: Any) -> tuple[Any, Any] | None:
    """(module, value): the outermost module of the failing call whose forward got, as its first
    argument, the value the innermost one got, when that value is no tensor."""
    calls: list[tuple[Any, Any]] = []
    for frame in crash.frames:
        owner = frame.locals.get("self")
        code = frame.live.f_code if frame.live is not None else None
        if isinstance(owner, torch.nn.Module) and frame.function == "forward" and code is not None and code.co_argcount >= 2:
            calls.append((owner, frame.locals.get(code.co_varnames[1])))
    if not calls or isinstance(calls[-1][1], torch.Tensor):
        return None
    value = calls[-1][1]
    return next((module, got) for module, got in calls if got is value)


def _entry(crash: Crash, value: Any) -> tuple[Frame, str] | None:
    """The outermost user frame whose variables hold `value` itself, and the variable's name."""
    for frame in crash.frames:
        if not is_user_file(frame.file):
            continue
        name = next((key for key, held in frame.locals.items() if held is value), None)
        if name is not None:
            return frame, name
    return None


def _numbers(value: Any, depth: int = 0) -> bool:
    """A (nested) list or tuple of Python numbers."""
    if isinstance(value, bool) or depth > 8:
        return False
    if isinstance(value, (int, float)):
        return True
    return isinstance(value, (list, tuple)) and bool(value) and all(_numbers(item, depth + 1) for item in value[:64])


#: where these explainers are tried: lower first (core/plugins.py)
ORDER = 65
EXPLAINERS = (non_tensor_into_module,)
