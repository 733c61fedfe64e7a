"""The op a crash happened in: the aten op the user's line called (read from the frame or the
message), its dispatch key, and the backends this torch has kernels of it for. The kernel
explainers (kernels.py) and the tensor explainers (tensors.py) both name it."""

from __future__ import annotations

import ast
import builtins
import linecache
import re
import types
from dataclasses import dataclass
from typing import Any

from torchdoctor.observe.crash.describe import tensors_near, torch_module
from torchdoctor.observe.crash.model import Crash, Frame

NOT_IMPLEMENTED = re.compile(r"\"(?P<kernel>\w+)\" not implemented for '(?P<dtype>[\w:]+)'")
COULD_NOT_RUN = re.compile(r"Could not run '(?P<op>[\w:.]+)' with arguments from the '(?P<key>\w+)' backend")
_WRAPPER = re.compile(r"\bin method wrapper_(?P<key>[A-Za-z]+?)_+(?P<op>\w+?)\)")


_BINARY = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.MatMult: "matmul", ast.Pow: "pow",
           ast.FloorDiv: "floor_divide", ast.Mod: "remainder"}


@dataclass(frozen=True)
class OpSite:
    """The aten op a crash was raised in, the dispatch key, and the kernel label when known."""

    op: str
    key: str | None
    kernel: str | None = None

    def backends(self) -> str:
        """`CPU, Meta` (own kernels), `every backend, as other ops` (composite), or ``."""
        from torchdoctor.introspect import dispatcher

        try:
            own, composite = dispatcher.backends_with_kernel(self.op)
        except RuntimeError:
            return ""
        if own:
            return ", ".join(own)
        return "every backend, as other ops (a composite op)" if composite else ""

    def evidence(self) -> dict[str, Any]:
        return {"op": self.op, "dispatch_key": self.key, "kernel": self.kernel, "backends": self.backends()}


def op_at(crash: Crash) -> OpSite | None:
    """The op the crash was raised in (see the module's doc); None when it cannot be told."""
    torch = torch_module()
    if torch is None:
        return None
    match = COULD_NOT_RUN.search(crash.message)
    if match:
        return OpSite(match["op"], match["key"])
    match = _WRAPPER.search(crash.message)
    if match and _exists(f"aten::{match['op']}"):
        return OpSite(f"aten::{match['op']}", match["key"])
    frame = next(iter(crash.deepest()), None)
    name = _called_op(frame) if frame is not None else None
    if name is None:
        return None
    label = NOT_IMPLEMENTED.search(crash.message)
    kernel = label["kernel"] if label else None
    return OpSite(name, _key_of(crash, kernel), kernel)


def _exists(op: str) -> bool:
    from torchdoctor.introspect import dispatcher

    return dispatcher.exists(op) or any(name.startswith(op + ".") for name in _all_ops())


def _all_ops() -> list[str]:
    torch = torch_module()
    return list(torch._C._dispatch_get_all_op_names()) if torch is not None else []


def _called_op(frame: Frame) -> str | None:
    """`aten::linalg_eigh` for a frame that raised while calling `torch.linalg.eigh(x)`."""
    node = expression_at(frame)
    if node is None:
        return None
    name = None
    if isinstance(node, ast.Call):
        callee = _resolve(node.func, frame)
        name = getattr(callee, "__name__", None) if _is_torch_builtin(callee) else None
    elif isinstance(node, ast.BinOp):
        name = _BINARY.get(type(node.op))
    if not name:
        return None
    op = f"aten::{name}"
    return op if _exists(op) else None


def expression_at(frame: Frame) -> ast.AST | None:
    """The expression the frame was evaluating when it raised (Python 3.11+ positions)."""
    if frame.live is None or frame.lasti < 0:
        return None
    code = frame.live.f_code
    try:
        start, end, column, end_column = list(code.co_positions())[frame.lasti // 2]
    except (AttributeError, IndexError):
        return None
    if start is None or end is None or column is None or end_column is None:
        return None
    lines = [linecache.getline(code.co_filename, n) for n in range(start, end + 1)]
    if not all(lines):
        return None
    if start == end:
        text = lines[0][column:end_column]
    else:
        text = lines[0][column:] + "".join(lines[1:-1]) + lines[-1][:end_column]
    try:
        return ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        return None


def _resolve(node: ast.AST, frame: Frame) -> Any:
    """The object a `torch.linalg.eigh` / `x.mm` / `F.linear` expression names, following only
    attributes of modules, classes and tensors (nothing a user wrote runs)."""
    torch = torch_module()
    if isinstance(node, ast.Name):
        namespace = {**vars(builtins), **(frame.live.f_globals if frame.live else {}), **frame.locals}
        return namespace.get(node.id)
    if isinstance(node, ast.Attribute):
        owner = _resolve(node.value, frame)
        if isinstance(owner, (types.ModuleType, type)) or (torch is not None and isinstance(owner, torch.Tensor)):
            return getattr(owner, node.attr, None)
    return None


def _is_torch_builtin(callee: Any) -> bool:
    if not isinstance(callee, (types.BuiltinFunctionType, types.BuiltinMethodType, types.MethodDescriptorType)):
        return False
    torch = torch_module()
    owner = getattr(callee, "__self__", None)
    module = getattr(callee, "__module__", None) or getattr(owner, "__name__", "") or ""
    return str(module).startswith("torch") or (torch is not None and isinstance(owner, torch.Tensor)) or isinstance(
        callee, types.MethodDescriptorType)


def _key_of(crash: Crash, kernel: str | None) -> str | None:
    """The backend key of the failing call: the kernel label's suffix (`lu_cpu`), else the
    device of the tensors of the innermost frame."""
    if kernel:
        for suffix, key in (("_cpu", "CPU"), ("_cuda", "CUDA"), ("_mps", "MPS")):
            if kernel.endswith(suffix):
                return key
    torch = torch_module()
    for _name, tensor, _frame in tensors_near(crash):
        try:
            return str(torch._C._dispatch_key_for_device(tensor.device.type))
        except (RuntimeError, TypeError):
            continue
    return None


def op_clause(crash: Crash) -> tuple[str, dict[str, Any] | None]:
    """` (raised in aten::addmm's CPU kernel)` and its evidence, for the explanations of device
    and dtype mismatches; ("", None) when the op cannot be told."""
    try:
        site = op_at(crash)
    except Exception:  # noqa: BLE001 - an explanation without the op is still an explanation
        return "", None
    if site is None:
        return "", None
    kernel = f"{site.op}'s {site.key} kernel" if site.key else site.op
    return f" (raised in {kernel})", site.evidence()
