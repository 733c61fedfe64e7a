""""Torch not compiled with CUDA enabled": the call on the user's line that asks for CUDA
(`.cuda()`, a "cuda" device string, `torch.cuda.*Tensor`), read from the line; "Device index
must not be negative": the `x.get_device()` of a CPU tensor on the line."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from torchdoctor.observe.crash.describe import line_nodes, resolve, torch_module
from torchdoctor.observe.crash.explain import Explanation
from torchdoctor.observe.crash.model import Crash
from torchdoctor.rules.device.cuda_not_available import RULE
from torchdoctor.rules.device.get_device_of_cpu_tensor import RULE as GET_DEVICE

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Holdings

_MESSAGE = "Torch not compiled with CUDA enabled"
_NO_DRIVER = "Found no NVIDIA driver on your system"


def cuda_not_available(crash: Crash, session: Holdings | None) -> Explanation | None:
    torch = torch_module()
    frame = crash.user_frame()
    if torch is None or frame is None or crash.exc_type not in ("AssertionError", "TypeError", "RuntimeError"):
        return None
    if _MESSAGE in crash.message:
        fields = {"why": f"this torch ({torch.__version__}) is a CPU-only build: it has no CUDA at all"}
    elif _NO_DRIVER in crash.message:
        fields = {"why": f"this CUDA build of torch ({torch.__version__}) finds no NVIDIA driver on this machine"}
    else:
        return None
    asking = [node for node in line_nodes(frame) if isinstance(node, ast.Call) and _asks_for_cuda(node)]
    if not asking:
        return Explanation(RULE, fields, variant="no-call")
    innermost = min(asking, key=lambda node: len(ast.unparse(node)))
    return Explanation(RULE, fields | {"call": ast.unparse(innermost)})


def _asks_for_cuda(call: ast.Call) -> bool:
    """`.cuda()`, `torch.cuda.FloatTensor(...)`, or a call given a "cuda" device string."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr == "cuda":
        return True
    if isinstance(func, ast.Attribute) and func.attr.endswith("Tensor") and isinstance(func.value, ast.Attribute) and func.value.attr == "cuda":
        return True
    given = [*call.args, *(keyword.value for keyword in call.keywords)]
    return any(isinstance(value, ast.Constant) and isinstance(value.value, str) and value.value.startswith("cuda") for value in given)


def get_device_of_cpu_tensor(crash: Crash, session: Holdings | None) -> Explanation | None:
    torch = torch_module()
    frame = crash.user_frame()
    if torch is None or frame is None or crash.exc_type != "RuntimeError" or "Device index must not be negative" not in crash.message:
        return None
    found = [node for node in line_nodes(frame) if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
             and node.func.attr == "get_device" and not node.args
             and isinstance(tensor := resolve(node.func.value, frame), torch.Tensor) and tensor.device.type == "cpu"]
    if len(found) != 1:
        return None
    call = found[0]
    assert isinstance(call.func, ast.Attribute)
    return Explanation(GET_DEVICE, {"call": ast.unparse(call), "name": ast.unparse(call.func.value)})


ORDER = 35
EXPLAINERS = (cuda_not_available, get_device_of_cpu_tensor)
