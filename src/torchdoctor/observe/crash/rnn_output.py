"""A crash on a tuple that a name took whole from a recurrent layer (`out = self.lstm(x)`):
the name is found among the failing user frame's variables, its binding read from the source,
and the callee checked on the live objects (an `nn.RNNBase`)."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from torchdoctor.observe.crash.describe import resolve, torch_module
from torchdoctor.observe.crash.explain import Explanation
from torchdoctor.observe.crash.model import Crash
from torchdoctor.observe.crash.provenance import binding_of, crashes_at
from torchdoctor.rules.api.rnn_output_not_unpacked import RULE

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Holdings

_ON_A_TUPLE = re.compile(r"tuple indices must be integers or slices|must be Tensor, not tuple|'tuple' object has no attribute")
#: what each layer returns, in words of its own documentation
_PARTS = {"LSTM": ("output, (h_n, c_n)", "(h_n, c_n)"), "GRU": ("output, h_n", "h_n"), "RNN": ("output, h_n", "h_n")}


def rnn_output_not_unpacked(crash: Crash, session: Holdings | None) -> Explanation | None:
    torch = torch_module()
    frame = crash.user_frame()
    if crash.exc_type not in ("TypeError", "AttributeError") or not _ON_A_TUPLE.search(crash.message) or torch is None or frame is None:
        return None
    for name, value in frame.locals.items():
        if not (isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], torch.Tensor)):
            continue
        made = binding_of(frame, name, frame.line)
        layer = resolve(made.func, frame) if isinstance(made, ast.Call) else None  # `self.lstm`, `rnn`
        if not isinstance(layer, torch.nn.RNNBase) or not isinstance(made, ast.Call):
            continue
        kind = next((k for k in _PARTS if isinstance(layer, getattr(torch.nn, k))), None)
        if kind is None:
            continue
        parts, state = _PARTS[kind]
        return Explanation(RULE, {"name": name, "layer": f"nn.{kind}", "parts": parts, "state": state,
                                  "call": ast.unparse(made), "crashed": crashes_at(crash)}, at=(frame.file, made.lineno))
    return None


ORDER = 63
EXPLAINERS = (rnn_output_not_unpacked,)
