""""shape '[-1, 320]' is invalid for input of size 4000": the `view`/`reshape` on the user's line,
the tensor it was asked of (a variable or attribute holding that many values, read live, never
by running the user's expression again). A flatten of a batch (`x.view(-1, 320)`) is TD417's
(observe/crash/tensors.py: the Linear after it), which is tried first."""

from __future__ import annotations

import ast
import math
import re
from typing import TYPE_CHECKING, Any

from torchdoctor.observe.crash.describe import reshaped_on_line, torch_module
from torchdoctor.observe.crash.explain import Explanation
from torchdoctor.observe.crash.model import Crash
from torchdoctor.rules.api.reshape_size_mismatch import RULE

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Holdings

_INVALID = re.compile(r"^shape '\[(?P<shape>[-\d, ]*)\]' is invalid for input of size (?P<size>\d+)")


def reshape_size_mismatch(crash: Crash, session: Holdings | None) -> Explanation | None:
    torch = torch_module()
    frame = crash.user_frame()
    match = _INVALID.match(crash.message) if crash.exc_type == "RuntimeError" else None
    if torch is None or frame is None or match is None:
        return None
    size = int(match["size"])
    found = reshaped_on_line(frame, size)
    if len(found) != 1:
        return None
    call, receiver, tensor = found[0]
    shape = [int(d) for d in match["shape"].split(",") if d.strip()]
    fields: dict[str, Any] = {"call": ast.unparse(call), "name": ast.unparse(receiver), "have_shape": list(tensor.shape), "have": size}
    known = math.prod(d for d in shape if d != -1)
    if -1 not in shape:
        return Explanation(RULE, fields | {"shape": shape, "want": known})
    return Explanation(RULE, fields | {"shape": shape, "known": known}, variant="inferred")


ORDER = 78
EXPLAINERS = (reshape_size_mismatch,)
