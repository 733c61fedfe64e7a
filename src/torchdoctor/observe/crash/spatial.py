"""A convolution or pooling layer whose input is smaller than its kernel ("Kernel size can't be
greater than actual input size", "Output size is too small"): the input shrank through the
layers before it (an image too small for the model's number of downsamplings). Read from the
live layer and the inputs of its frame and of the outermost module's."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from torchdoctor.observe.crash.describe import innermost_module, module_label, torch_module
from torchdoctor.observe.crash.explain import Explanation
from torchdoctor.observe.crash.model import Crash
from torchdoctor.rules.api.layer_input_shape_mismatch import RULE as SHAPE

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Holdings

_TOO_SMALL = re.compile(r"Kernel size can't be greater than actual input size|Output size is too small|Invalid computed output size: 0")


def input_too_small(crash: Crash, session: Holdings | None) -> Explanation | None:
    torch = torch_module()
    if crash.exc_type != "RuntimeError" or not _TOO_SMALL.search(crash.message) or torch is None:
        return None
    kinds = (torch.nn.modules.conv._ConvNd, torch.nn.modules.pooling._MaxPoolNd, torch.nn.modules.pooling._AvgPoolNd)
    layer = innermost_module(crash, kinds)
    x = _input_of(crash, layer) if layer is not None else None
    kernel = _kernel(layer)
    if not isinstance(x, torch.Tensor) or not kernel:
        return None
    spatial = list(x.shape[-len(kernel):])
    fields: dict[str, Any] = {"layer": module_label(layer, session), "size": "x".join(map(str, spatial)),
                              "shape": list(x.shape), "kernel": "x".join(map(str, kernel))}
    root = _outermost(crash, torch)
    if root is None or root[0] is layer:
        return Explanation(SHAPE, fields, variant="input-too-small-direct")
    model, given = root
    return Explanation(SHAPE, fields | {"model": type(model).__name__, "model_shape": list(given.shape)}, variant="input-too-small")


def _input_of(crash: Crash, module: Any) -> Any:
    """The input tensor of `module`'s forward frame."""
    for frame in crash.deepest():
        if frame.locals.get("self") is module:
            found = frame.locals.get("input")
            if found is not None:
                return found
    return None


def _outermost(crash: Crash, torch: Any) -> tuple[Any, Any] | None:
    """The outermost module called, and the tensor it was given first: read from `nn.Module`'s
    call frame (`args`), which the forward's own rebinding (`x = self.pool(x)`) does not touch."""
    for frame in crash.frames:
        owner, args = frame.locals.get("self"), frame.locals.get("args")
        if frame.function in ("_call_impl", "_wrapped_call_impl") and isinstance(owner, torch.nn.Module) and isinstance(args, tuple):
            if args and isinstance(args[0], torch.Tensor):
                return owner, args[0]
    return None


def _kernel(layer: Any) -> tuple[int, ...]:
    """The layer's kernel, one size per spatial dimension (`MaxPool2d(2)` keeps an int: (2, 2))."""
    size = getattr(layer, "kernel_size", None)
    name = type(layer).__name__
    dims = int(name[-2]) if name[-2:-1].isdigit() and name.endswith("d") else 0
    if isinstance(size, int) and dims:
        return (size,) * dims
    return tuple(int(s) for s in size) if isinstance(size, tuple) and all(isinstance(s, int) for s in size) else ()


ORDER = 72
EXPLAINERS = (input_too_small,)
