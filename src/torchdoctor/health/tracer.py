"""What happened during one forward and loss call on the copy, with the user's lines.

`Tracer` is a TorchFunctionMode that watches a handful of torch functions (it passes all the
others straight through): softmax and sigmoid (whose outputs must not feed a logits loss),
operations that leave autograd (`.detach()`, `.item()`, `.data`, `torch.tensor(t)`, ...), loss
functions and their arguments, functional dropout and its `training` flag, and, when asked,
the first operation that turned finite inputs into NaN or Inf. `ModuleWatch` keeps the stack
of modules being run (so a record made inside torch code can still name the module), and
`capture_functions` keeps the first inputs of every custom `autograd.Function` for gradcheck.
"""

from __future__ import annotations

import contextlib
import linecache
import os
import sys
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.overrides import TorchFunctionMode

from torchdoctor.core.locate import is_user_file
from torchdoctor.introspect.sites import Site, user_site
from torchdoctor.introspect.tensors import tensors_in

SOFTMAX = {torch.softmax, F.softmax, torch.Tensor.softmax, torch.special.softmax}
SIGMOID = {torch.sigmoid, F.sigmoid, torch.Tensor.sigmoid, torch.special.expit}
CUTS = {
    torch.Tensor.detach: ".detach()",
    torch.Tensor.detach_: ".detach_()",
    torch.Tensor.item: ".item()",
    torch.Tensor.tolist: ".tolist()",
    torch.Tensor.numpy: ".numpy()",
    torch.tensor: "torch.tensor(...)",
    torch.as_tensor: "torch.as_tensor(...)",
    torch.Tensor.new_tensor: ".new_tensor(...)",
}
LOSSES = {
    F.cross_entropy: "cross_entropy",
    F.nll_loss: "nll_loss",
    F.binary_cross_entropy_with_logits: "binary_cross_entropy_with_logits",
    F.binary_cross_entropy: "binary_cross_entropy",
    F.mse_loss: "mse_loss",
    F.l1_loss: "l1_loss",
    F.smooth_l1_loss: "smooth_l1_loss",
    F.huber_loss: "huber_loss",
}
DROPOUTS = {F.dropout, F.dropout1d, F.dropout2d, F.dropout3d, F.alpha_dropout, F.feature_alpha_dropout}
_OVERRIDES = os.path.join("torch", "overrides.py")


@dataclass
class Producer:
    kind: str  # "softmax" | "sigmoid"
    call: str
    site: Site | None
    module: str | None
    node: Any


@dataclass
class Cut:
    op: str
    site: Site | None
    module: str | None
    node: Any  # grad_fn of the tensor that was cut
    phase: str


@dataclass
class LossCall:
    name: str
    input: torch.Tensor
    target: Any
    kwargs: dict[str, Any]
    site: Site | None


@dataclass
class DropoutCall:
    site: Site | None
    module: str | None
    direct: bool  # called from user code, not through nn.Dropout
    explicit_training: bool  # the call's source text passes training=...


@dataclass
class Origin:
    op: str
    site: Site | None
    module: str | None


@dataclass
class Records:
    producers: dict[int, Producer] = field(default_factory=dict)
    cuts: list[Cut] = field(default_factory=list)
    losses: list[LossCall] = field(default_factory=list)
    dropouts: list[DropoutCall] = field(default_factory=list)
    origin: Origin | None = None


class ModuleWatch:
    """Forward hooks on every module of the copy: the stack being run and what ran at all."""

    def __init__(self, model: nn.Module) -> None:
        self.stack: list[str] = []
        self.ran: set[str] = set()
        self.ran_with_grad: set[str] = set()
        self._handles: list[Any] = []
        for name, module in model.named_modules():
            try:
                self._handles.append(module.register_forward_pre_hook(self._enter(name)))
                self._handles.append(module.register_forward_hook(self._leave))
            except (RuntimeError, AttributeError):  # TorchScript modules take no Python hooks
                continue

    def _enter(self, name: str) -> Any:
        def hook(module: nn.Module, args: Any) -> None:
            self.stack.append(name)
            self.ran.add(name)
            if torch.is_grad_enabled():
                self.ran_with_grad.add(name)

        return hook

    def _leave(self, module: nn.Module, args: Any, output: Any) -> None:
        if self.stack:
            self.stack.pop()

    @property
    def current(self) -> str | None:
        return self.stack[-1] if self.stack else None

    def close(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()


class Tracer(TorchFunctionMode):
    """Records the calls above; `phase` ("forward" or "loss") is set by the caller."""

    def __init__(self, watch: ModuleWatch | None = None, diagnose: bool = False) -> None:
        super().__init__()
        self.records = Records()
        self.watch = watch
        self.diagnose = diagnose
        self.phase = "forward"

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if self.diagnose and self.records.origin is None:
            return self._diagnose(func, args, kwargs)
        if func in DROPOUTS:
            training = kwargs.get("training", args[2] if len(args) > 2 else True)
            if training:
                self._dropout(func)
            return func(*args, **kwargs)
        if func in LOSSES and args:
            target = args[1] if len(args) > 1 else kwargs.get("target")
            self.records.losses.append(LossCall(LOSSES[func], args[0], target, dict(kwargs), self._site()))
            return func(*args, **kwargs)
        result = func(*args, **kwargs)
        if func in SOFTMAX or func in SIGMOID:
            node = getattr(result, "grad_fn", None)
            if node is not None:
                kind = "softmax" if func in SOFTMAX else "sigmoid"
                self.records.producers[id(node)] = Producer(kind, _call_name(func), self._site(), self._module(), node)
        elif func in CUTS or _is_data_getter(func):
            source = args[0] if args else None
            node = getattr(source, "grad_fn", None) if isinstance(source, torch.Tensor) else None
            if isinstance(source, torch.Tensor) and source.requires_grad and torch.is_grad_enabled():
                op = CUTS.get(func, ".data")
                self.records.cuts.append(Cut(op, self._site(), self._module(), node, self.phase))
        return result

    def _site(self) -> Site | None:
        return user_site(sys._getframe(1))

    def _module(self) -> str | None:
        return self.watch.current if self.watch is not None else None

    def _dropout(self, func: Any) -> None:
        caller = _immediate_caller(sys._getframe(2), func)
        direct = caller is not None and is_user_file(caller.f_code.co_filename)
        site = self._site()
        self.records.dropouts.append(
            DropoutCall(site, self._module(), direct, direct and site is not None and _mentions_training(site))
        )

    def _diagnose(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        result = func(*args, **kwargs)
        outputs = [t for t in tensors_in(result) if t.is_floating_point() or t.is_complex()]
        if outputs and not all(_finite(t) for t in outputs):
            inputs = tensors_in(list(args)) + tensors_in(kwargs)
            if all(_finite(t) for t in inputs if t.is_floating_point()):
                self.records.origin = Origin(_call_name(func), self._site(), self._module())
        return result


def _finite(tensor: torch.Tensor) -> bool:
    if tensor.numel() == 0 or tensor.device.type == "meta":
        return True
    return bool(torch.isfinite(tensor).all())


def _is_data_getter(func: Any) -> bool:
    return getattr(func, "__name__", "") == "__get__" and getattr(func, "__self__", None) is torch.Tensor.data


def _call_name(func: Any) -> str:
    name = getattr(func, "__name__", str(func))
    module = getattr(func, "__module__", "") or ""
    if module.startswith("torch.nn.functional"):
        return f"F.{name}"
    qualname = getattr(func, "__qualname__", name)
    if qualname.startswith(("Tensor.", "TensorBase.")):
        return f".{name}()"
    return f"torch.{name}"


def _immediate_caller(frame: FrameType | None, func: Any) -> FrameType | None:
    """The frame that called `func` (past torch's __torch_function__ dispatch)."""
    code = getattr(func, "__code__", None)
    while frame is not None and (frame.f_code is code or frame.f_code.co_filename.endswith(_OVERRIDES)):
        frame = frame.f_back
    return frame


def _mentions_training(site: Site) -> bool:
    """Whether the call written at `site` (and the lines of its arguments) passes training=,
    by keyword or by a name (`self.training`): read off the call's tokens, so a comment or a
    string that says "training" passes nothing."""
    lines = iter([linecache.getline(site.file, site.line + offset) for offset in range(4)] + [""])
    depth = 0
    try:
        for token in tokenize.generate_tokens(lambda: next(lines)):
            if token.type == tokenize.OP and token.string in "([{":
                depth += 1
            elif token.type == tokenize.OP and token.string in ")]}":
                depth -= 1
                if depth <= 0:
                    return False
            elif token.type == tokenize.NAME and depth > 0 and "training" in token.string:
                return True
    except (tokenize.TokenError, SyntaxError):  # the call goes on past the lines read
        pass
    return False


@contextlib.contextmanager
def capture_functions(store: dict[type, tuple[Any, ...]]) -> Iterator[None]:
    """Keep a detached copy of the first inputs of each user-defined autograd.Function."""
    function = torch.autograd.Function
    original = function.__dict__["apply"]

    def apply(cls: type, *args: Any, **kwargs: Any) -> Any:
        if cls not in store and is_user_file(getattr(sys.modules.get(cls.__module__), "__file__", "") or ""):
            store[cls] = tuple(a.detach().clone() if isinstance(a, torch.Tensor) else a for a in args)
        return original.__get__(None, cls)(*args, **kwargs)  # a classmethod on torch 2.13, a C classmethod_descriptor on 2.14

    function.apply = classmethod(apply)  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        function.apply = original  # type: ignore[method-assign]


def graph_nodes(root: Any, limit: int = 100_000) -> Iterator[Any]:
    """Every autograd node reachable from `root` (a grad_fn), each once."""
    if root is None:
        return
    seen = {id(root)}
    stack = [root]
    while stack and len(seen) < limit:
        node = stack.pop()
        yield node
        for child, _ in getattr(node, "next_functions", ()):
            if child is not None and id(child) not in seen:
                seen.add(id(child))
                stack.append(child)


def leaves(root: Any) -> set[int]:
    """ids of the leaf tensors (parameters) whose gradient flows through `root`."""
    return {id(node.variable) for node in graph_nodes(root) if hasattr(node, "variable")}


#: autograd nodes that change shape or layout only: softmax seen through them is still softmax
TRANSPARENT = (
    "ViewBackward", "ReshapeAliasBackward", "UnsafeViewBackward", "SqueezeBackward", "UnsqueezeBackward",
    "PermuteBackward", "TransposeBackward", "TBackward", "CloneBackward", "ToCopyBackward", "ExpandBackward",
    "SliceBackward", "SelectBackward", "CatBackward", "StackBackward", "ContiguousBackward", "AliasBackward",
)


def producer_of(tensor: torch.Tensor, records: Records) -> Producer | None:
    """The softmax or sigmoid that produced `tensor`, seen through shape-only operations."""
    node = tensor.grad_fn
    for _ in range(64):
        if node is None:
            return None
        found = records.producers.get(id(node))
        if found is not None:
            return found
        name = type(node).__name__
        if name.startswith(("SoftmaxBackward", "SigmoidBackward")):
            kind = "softmax" if name.startswith("Softmax") else "sigmoid"
            return Producer(kind, kind, None, None, node)
        if not name.startswith(TRANSPARENT):
            return None
        children = [child for child, _ in node.next_functions if child is not None]
        if len(children) != 1:
            return None
        node = children[0]
    return None
