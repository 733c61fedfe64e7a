"""An attribute asked of the wrong layer of a `DataParallel`/`DistributedDataParallel` model:
of the wrapper, when the model inside has it; `.module` of a model that is not wrapped. The
object is found among the failing user frame's variables, by the type the message names."""

from __future__ import annotations

from typing import TYPE_CHECKING

from torchdoctor.observe.crash.describe import NO_ATTRIBUTE, torch_module
from torchdoctor.observe.crash.explain import Explanation
from torchdoctor.observe.crash.model import Crash
from torchdoctor.rules.api.wrapped_model_attribute import RULE

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Holdings

_WRAPPERS = ("DataParallel", "DistributedDataParallel")


def wrapped_model_attribute(crash: Crash, session: Holdings | None) -> Explanation | None:
    match = NO_ATTRIBUTE.match(crash.message) if crash.exc_type == "AttributeError" else None
    torch = torch_module()
    frame = crash.user_frame()
    if match is None or torch is None or frame is None:
        return None
    kind, attribute = match["type"], match["attribute"]
    for name, value in frame.locals.items():
        if not isinstance(value, torch.nn.Module) or type(value).__name__ != kind or name == "self":
            continue
        inner = getattr(value, "_modules", {}).get("module")
        if kind in _WRAPPERS and isinstance(inner, torch.nn.Module) and _has(inner, attribute):
            return Explanation(RULE, {"name": name, "wrapper": kind, "model": type(inner).__name__, "attribute": attribute})
        if kind not in _WRAPPERS and attribute == "module":
            return Explanation(RULE, {"name": name, "model": kind}, variant="bare")
    return None


def _has(module: object, attribute: str) -> bool:
    try:
        getattr(module, attribute)
    except Exception:  # noqa: BLE001 - a property of the user's model may raise anything
        return False
    return True


ORDER = 68
EXPLAINERS = (wrapped_model_attribute,)
