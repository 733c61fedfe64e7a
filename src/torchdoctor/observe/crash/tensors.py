"""Crashes about tensors meeting each other: devices, dtypes, shapes, strides, indices."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Any

from torchdoctor.core.locate import is_user_file
from torchdoctor.introspect.source import child_built_at
from torchdoctor.observe.crash.describe import (
    describe,
    dtype_name,
    innermost_module,
    module_label,
    reshaped_on_line,
    tensor_dtype,
    tensors_near,
    torch_module,
    user_names,
)
from torchdoctor.observe.crash.explain import Explanation
from torchdoctor.observe.crash.model import Crash
from torchdoctor.observe.crash.ops import op_clause
from torchdoctor.observe.crash.provenance import KEEPING, converts_to, crashes_at, made_here, origin_of
from torchdoctor.rules.api.layer_input_shape_mismatch import RULE as SHAPE
from torchdoctor.rules.api.view_of_non_contiguous import RULE as VIEW
from torchdoctor.rules.data.batch_samples_mixed import RULE as BATCH_MIXED
from torchdoctor.rules.data.embedding_index_out_of_range import RULE as EMBEDDING
from torchdoctor.rules.device.device_mismatch import RULE as DEVICE
from torchdoctor.rules.dtype.dtype_mismatch import RULE as DTYPE

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Holdings

_DEVICES = (
    re.compile(r"Expected all tensors to be on the same device, but found at least two devices, (?P<a>[\w:]+) and (?P<b>[\w:]+)"),
    re.compile(r"Expected all tensors to be on the same device, but got \w+ is on (?P<a>[\w:]+), different from other tensors on (?P<b>[\w:]+)"),
    re.compile(r"Tensor on device (?P<a>[\w:]+) is not on the expected device (?P<b>[\w:]+)"),
    re.compile(r"Expected object of device type (?P<b>\w+) but got device type (?P<a>\w+)"),
    re.compile(r"Input type \(torch\.(?P<a>cuda\.)?\w+\) and weight type \(torch\.(?P<b>cuda\.)?\w+\) should be the same"),
)
_DTYPES = (
    re.compile(r"mat1 and mat2 must have the same dtype, but got (?P<a>\w+) and (?P<b>\w+)"),
    re.compile(r"expected m1 and m2 to have the same dtype, but got: (?P<a>[\w:]+) != (?P<b>[\w:]+)"),
    re.compile(r"Input type \((?P<a>\w+)\) and (?:weight|bias) type \((?P<b>\w+)\) should be the same"),
    re.compile(r"expected scalar type (?P<b>\w+) but found (?P<a>\w+)"),
    re.compile(r"Found dtype (?P<a>\w+) but expected (?P<b>\w+)"),
    re.compile(r"expected (?:mat1|input) and (?:mat2|weight) to have the same dtype, but got: (?P<a>[\w:]+) != (?P<b>[\w:]+)"),
    re.compile(r"RNN input dtype \((?P<a>[\w.]+)\) does not match weight dtype \((?P<b>[\w.]+)\)"),
)
_HIDDEN = re.compile(r"Expected hidden(?:\[(?P<index>\d)\])? size \((?P<want>[\d, ]+)\), got \[(?P<got>[\d, ]+)\]")
_MATMUL = re.compile(r"mat1 and mat2 shapes cannot be multiplied \((?P<n>\d+)x(?P<got>\d+) and (?P<k>\d+)x(?P<m>\d+)\)")
_DIMENSIONS = re.compile(r"Expected (?P<unbatched>\d)D \(unbatched\) or (?P<batched>\d)D \(batched\) input to conv(?P<spatial>\d)d, "
                         r"but got input of size: \[(?P<shape>[\d, ]*)\]")
_INVALID_SHAPE = re.compile(r"shape '\[(?P<shape>-?[\d, -]+)\]' is invalid for input of size (?P<size>\d+)")
_CHANNELS = re.compile(
    r"weight of size \[(?P<weight>[\d, ]+)\], expected input\[(?P<input>[\d, ]+)\] to have (?P<want>\d+) channels, but got (?P<got>\d+) channels"
)


def _first_match(patterns: tuple[re.Pattern[str], ...], text: str) -> re.Match[str] | None:
    for pattern in patterns:
        match = pattern.search(text)
        if match:
            return match
    return None


def device_mismatch(crash: Crash, session: Holdings | None) -> Explanation | None:
    match = _first_match(_DEVICES, crash.message)
    if match is None:
        return None
    first, second = _device(match["a"]), _device(match["b"])
    a = _pick(crash, session, lambda t: str(t.device) == first or t.device.type == first)
    b = _pick(crash, session, lambda t: str(t.device) == second or t.device.type == second)
    names = (a[0] if a else "one tensor", b[0] if b else "another")
    where = _where(crash, session)
    param_side = _is_param(a[1]) if a else False, _is_param(b[1]) if b else False
    if param_side[1] and not param_side[0]:
        variant = "first-off-model-device"
    elif param_side[0] and not param_side[1]:
        variant = "second-off-model-device"
    else:
        variant = "both-devices"
    clause, op = op_clause(crash)
    return Explanation(DEVICE, {"first": names[0], "first_device": first, "second": names[1], "second_device": second,
                                "where": where + clause}, variant=variant, evidence={"op": op} if op else None)


def dtype_mismatch(crash: Crash, session: Holdings | None) -> Explanation | None:
    match = _first_match(_DTYPES, crash.message)
    if match is None:
        return None
    first, second = dtype_name(match["a"]), dtype_name(match["b"])
    if first == second:
        return None
    a = _pick(crash, session, lambda t: tensor_dtype(t) == first)
    b = _pick(crash, session, lambda t: tensor_dtype(t) == second and (a is None or t is not a[1]))
    names = (a[0] if a else f"a {first} tensor", b[0] if b else f"a {second} tensor")
    wide = first if first == "float64" else second if second == "float64" else None
    culprit = _culprit(a, b, wide)
    origin = origin_of(crash, culprit, converts_to(tensor_dtype(culprit))) if culprit is not None else None
    clause, op = op_clause(crash)
    where = _where(crash, session) + clause
    if origin is not None and culprit is not None:
        made, want = tensor_dtype(culprit), second if culprit is (a[1] if a else None) else first
        return Explanation(DTYPE, {"first": names[0], "first_dtype": first, "second": names[1], "second_dtype": second,
                                   "where": where + made_here(origin, f"made {made}", crash), "conversion": origin.text,
                                   "made": made, "want": want}, at=(origin.file, origin.line), variant="converted",
                           evidence={**({"op": op} if op else {}), "made_at": origin.place, "made_by": origin.text})
    fields = {"first": names[0], "first_dtype": first, "second": names[1], "second_dtype": second, "where": where}
    if wide is not None:
        return Explanation(DTYPE, fields | {"culprit": names[0] if wide == first else names[1]}, variant="float64",
                           evidence={"op": op} if op else None)
    return Explanation(DTYPE, fields, variant="mixed", evidence={"op": op} if op else None)


_INDICES = re.compile(r"Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                      r"[\w, ]+; but got (?:torch\.)?(?P<got>\w+) instead")


def embedding_indices_dtype(crash: Crash, session: Holdings | None) -> Explanation | None:
    """Token ids converted to floats before an `nn.Embedding` (`x.double()`, `x.float()`)."""
    match = _INDICES.search(crash.message)
    if match is None:
        return None
    got = dtype_name(match["got"])
    found = _pick(crash, session, lambda t: tensor_dtype(t) == got and not _is_param(t))
    name = found[0] if found else f"a {got} tensor"
    origin = origin_of(crash, found[1], converts_to(got)) if found else None
    fields = {"first": name, "first_dtype": got, "second": "the indices an embedding looks up", "second_dtype": "int64 (or int32)",
              "where": _where(crash, session) + (made_here(origin, f"made {got}", crash) if origin is not None else "")}
    if origin is None:
        return Explanation(DTYPE, fields, variant="embedding-indices")
    return Explanation(DTYPE, fields | {"place": origin.place, "conversion": origin.text}, at=(origin.file, origin.line),
                       variant="embedding-indices-converted")


def _culprit(a: tuple[str, Any] | None, b: tuple[str, Any] | None, wide: str | None) -> Any:
    """The tensor of the wrong dtype: the data beside a parameter, else the float64 one."""
    if a is None or b is None:
        return None
    if _is_param(a[1]) != _is_param(b[1]):
        return b[1] if _is_param(a[1]) else a[1]
    if wide is not None and not _is_param(a[1]):
        return a[1] if tensor_dtype(a[1]) == wide else b[1]
    return None


def view_of_non_contiguous(crash: Crash, session: Holdings | None) -> Explanation | None:
    if "view size is not compatible with input tensor's size and stride" not in crash.message:
        return None
    frame = crash.user_frame()
    torch = torch_module()
    name, producer = "the tensor", ""
    if frame is not None and torch is not None:
        for key, value in frame.locals.items():
            if isinstance(value, torch.Tensor) and not value.is_contiguous():
                name = f"`{key}`"
                producer = _producer(value)
                break
    origin = f" (it comes from {producer})" if producer else " (after a transpose, permute, expand or slicing)"
    return Explanation(VIEW, {"tensor": name, "origin": origin})


def shape_mismatch(crash: Crash, session: Holdings | None) -> Explanation | None:
    torch = torch_module()
    match = _MATMUL.search(crash.message)
    if match:
        linear = innermost_module(crash, torch.nn.Linear) if torch is not None else None
        got = int(match["got"])
        if linear is not None:
            layer = module_label(linear, session)
            return Explanation(
                SHAPE,
                {
                    "layer": layer,
                    "expected": f"in_features={linear.in_features}",
                    "got": f"{got} features per sample (input {match['n']}x{got})",
                    "features": got,
                }, variant="linear-in-features",
            )
        return Explanation(
            SHAPE,
            {
                "layer": "a matrix multiplication",
                "expected": f"{match['k']} rows in the second operand",
                "got": f"{got} columns in the first ({match['n']}x{got} @ {match['k']}x{match['m']})",
            }, variant="matmul",
        )
    match = _CHANNELS.search(crash.message)
    if match:
        conv = innermost_module(crash, torch.nn.modules.conv._ConvNd) if torch is not None else None
        layer = module_label(conv, session) if conv is not None else "a convolution"
        dims = [int(d) for d in match["input"].split(",")]
        want = int(match["want"])
        unbatched = _unbatched_input(crash, conv)
        fields: dict[str, Any] = {"layer": layer, "expected": f"{want} input channels", "got": f"{match['got']} channels (input shape [{match['input']}])"}
        if unbatched is not None:
            shape = tuple(unbatched.shape)
            fields |= {"ndim": len(shape), "shape": list(shape), "first": shape[0], "channels": want}
            variant = "unbatched-single-channel" if want == 1 else "unbatched"
        elif dims and dims[-1] == want:
            variant = "channels-last"
        else:
            variant = "in-channels"
            fields |= {"channels": want, "in_channels": match["got"]}
        return Explanation(SHAPE, fields, variant=variant)
    return None


_RNN_SIZE = re.compile(r"input\.size\(-1\) must be equal to input_size\. Expected (?P<want>\d+), got (?P<got>\d+)")
_NORM_DIMENSIONS = re.compile(r"expected (?P<want>\d)D(?: or (?P<also>\d)D)? input \(got (?P<got>\d)D input\)")
#: the batch-norm class for an input of so many dimensions
_NORM_KIND = {2: "BatchNorm1d", 3: "BatchNorm1d", 4: "BatchNorm2d", 5: "BatchNorm3d"}
_LAYER_NORM = re.compile(r"Given normalized_shape=\[(?P<want>[\d, ]+)\], expected input with shape \[\*, [\d, ]+\], but got input of size\s*\[(?P<got>[\d, ]+)\]")
_NORM_SIZE = re.compile(r"running_mean should contain (?P<got>\d+) elements not (?P<want>\d+)")


def feature_count(crash: Crash, session: Holdings | None) -> Explanation | None:
    """An RNN (input_size) or a batch-norm layer (num_features) built for another number of
    features than its input has, or a batch-norm layer of the wrong kind for its input's
    dimensions; confirmed on the layer and the input its forward got."""
    torch = torch_module()
    if torch is None:
        return None
    rnn, norm = _RNN_SIZE.search(crash.message), _NORM_SIZE.search(crash.message)
    if rnn is not None:
        layer = innermost_module(crash, torch.nn.RNNBase)
        if layer is None or layer.input_size != int(rnn["want"]):
            return None
        x = _forward_input(crash, layer)
        if x is None or x.dim() < 2 or int(x.shape[-1]) != int(rnn["got"]):
            return None
        want, got = int(rnn["want"]), int(rnn["got"])
        fields: dict[str, Any] = {"layer": module_label(layer, session), "expected": f"input_size={want}",
                                  "got": f"{got} features in the last dimension (input shape {list(x.shape)})"}
        axes = [i for i, d in enumerate(x.shape[:-1]) if int(d) == want]
        if len(axes) == 1:
            return Explanation(SHAPE, fields | {"expected_n": want, "axis": axes[0]}, variant="rnn-features-elsewhere")
        return Explanation(SHAPE, fields | {"features": got}, variant="rnn-input-size")
    kind = _NORM_DIMENSIONS.search(crash.message) if crash.exc_type == "ValueError" else None
    if kind is not None:
        layer = innermost_module(crash, torch.nn.modules.batchnorm._BatchNorm)
        x = _forward_input(crash, layer) if layer is not None else None
        right = _NORM_KIND.get(x.dim()) if x is not None else None
        if layer is None or x is None or right is None or right == type(layer).__name__ or x.dim() != int(kind["got"]):
            return None
        wanted = f"a {kind['want']}-D" + (f" or {kind['also']}-D" if kind["also"] else "")
        return Explanation(SHAPE, {"layer": module_label(layer, session), "expected": f"{wanted} input",
                                   "got": f"a {x.dim()}-D input {list(x.shape)}", "ndim": x.dim(), "shape": list(x.shape),
                                   "right": right, "channels": int(x.shape[1])}, variant="norm-kind")
    layer_norm = _LAYER_NORM.search(crash.message)
    if layer_norm is not None:
        return _layer_norm_shape(crash, session, layer_norm, torch)
    if norm is not None:
        layer = innermost_module(crash, torch.nn.modules.batchnorm._BatchNorm)
        if layer is None or layer.num_features != int(norm["want"]):
            return None
        x = _forward_input(crash, layer)
        if x is None or x.dim() < 2 or int(x.shape[1]) != int(norm["got"]):
            return None
        got = int(norm["got"])
        return Explanation(SHAPE, {"layer": module_label(layer, session), "expected": f"num_features={layer.num_features}",
                                   "got": f"{got} channels (input shape {list(x.shape)})", "features": got}, variant="norm-features")
    return None


def _layer_norm_shape(crash: Crash, session: Holdings | None, match: re.Match[str], torch: Any) -> Explanation | None:
    """A LayerNorm built for other trailing dimensions than its input has: said where the layer
    was built (its size is what the fix usually changes), with the line that crashed."""
    layer = innermost_module(crash, torch.nn.LayerNorm)
    want = [int(d) for d in match["want"].split(",")]
    got = [int(d) for d in match["got"].split(",")]
    if layer is None or list(layer.normalized_shape) != want or len(got) < len(want):
        return None
    tail = got[len(got) - len(want):]
    built = _built_at(crash, layer)
    return Explanation(SHAPE, {"layer": module_label(layer, session), "expected": f"normalized_shape={want}",
                               "got": f"an input ending in {tail} (shape {got})", "tail": tail,
                               "crashed": crashes_at(crash) if built is not None else ""},
                       at=built, variant="layer-norm-shape")


def _forward_input(crash: Crash, layer: Any) -> Any:
    """The tensor `layer`'s forward got (its `input`)."""
    torch = torch_module()
    for frame in crash.deepest():
        if frame.locals.get("self") is layer and frame.function == "forward":
            value = frame.locals.get("input")
            return value if torch is not None and isinstance(value, torch.Tensor) else None
    return None


def conv_dimensions(crash: Crash, session: Holdings | None) -> Explanation | None:
    """A convolution given an input of the wrong number of dimensions: an image without its batch
    and channel dimensions ((28, 28) to a Conv2d), or one with a dimension too many."""
    match = _DIMENSIONS.search(crash.message)
    torch = torch_module()
    conv = innermost_module(crash, torch.nn.modules.conv._ConvNd) if match is not None and torch is not None else None
    if match is None or conv is None:
        return None
    shape = [int(d) for d in match["shape"].split(",")] if match["shape"].strip() else []
    x = next((f.locals.get("input") for f in crash.deepest() if f.locals.get("self") is conv), None)
    spatial, batched, unbatched = int(match["spatial"]), int(match["batched"]), int(match["unbatched"])
    if not isinstance(x, torch.Tensor) or list(x.shape) != shape or conv.weight.dim() != spatial + 2:
        return None
    name = user_names(crash).get(id(x), "x")
    fields: dict[str, Any] = {"layer": module_label(conv, session), "batched": batched, "unbatched": unbatched, "name": name, "shape": shape}
    if len(shape) == spatial:
        if conv.in_channels == 1:
            return Explanation(SHAPE, fields | {"fixed": [1, 1, *shape]}, variant="no-channel-no-batch-single-channel")
        return Explanation(SHAPE, fields | {"channels": conv.in_channels}, variant="no-channel-no-batch")
    axis = next((i for i, d in enumerate(shape) if d == 1 and i > 0), None)
    if len(shape) == batched + 1 and axis is not None:
        return Explanation(SHAPE, fields | {"axis": axis}, variant="extra-dimension")
    fields |= {"channels": conv.in_channels, "spatial": spatial}
    return Explanation(SHAPE, fields, variant="dimensions")


_RNN_DIMENSIONS = re.compile(r"^(?P<kind>\w+): Expected input to be 2D or 3D, got (?P<got>\d)D instead")


def rnn_dimensions(crash: Crash, session: Holdings | None) -> Explanation | None:
    """An RNN/LSTM/GRU given an input of neither 2 nor 3 dimensions (often an `unsqueeze` too many)."""
    match = _RNN_DIMENSIONS.match(crash.message) if crash.exc_type == "ValueError" else None
    torch = torch_module()
    rnn = innermost_module(crash, torch.nn.RNNBase) if match is not None and torch is not None else None
    if rnn is None:
        return None
    x = next((f.locals.get("input") for f in crash.deepest() if f.locals.get("self") is rnn), None)
    if not isinstance(x, torch.Tensor) or x.dim() in (2, 3):
        return None
    shape = list(x.shape)
    fields: dict[str, Any] = {"layer": module_label(rnn, session), "name": user_names(crash).get(id(x), "x"), "shape": shape,
                              "order": "(batch, seq, features)" if rnn.batch_first else "(seq, batch, features)"}
    axis = next((i for i, d in enumerate(shape) if d == 1), None) if len(shape) == 4 else None
    if axis is not None:
        return Explanation(SHAPE, fields | {"axis": axis}, variant="rnn-extra-dimension")
    return Explanation(SHAPE, fields, variant="rnn-dimensions")


def flatten_size(crash: Crash, session: Holdings | None) -> Explanation | None:
    """`x.view(-1, 320)` (or `.reshape`) on a tensor whose samples hold another number of values:
    the flatten before a Linear written for another input size."""
    match = _INVALID_SHAPE.search(crash.message)
    frame = crash.user_frame()
    torch = torch_module()
    if match is None or frame is None or torch is None:
        return None
    wanted = [int(d) for d in match["shape"].split(",")]
    if len(wanted) != 2 or wanted[0] != -1 or wanted[1] <= 0:
        return None
    size, want = int(match["size"]), wanted[1]
    found = [(call, receiver, x) for call, receiver, x in reshaped_on_line(frame, size)
             if isinstance(receiver, ast.Name) and x.dim() >= 2 and int(x.shape[0]) > 0]
    if len(found) != 1:
        return None
    node, receiver, x = found[0]
    name, call = ast.unparse(receiver), " ".join(ast.unparse(node).split())
    per_sample = size // int(x.shape[0])
    fields: dict[str, Any] = {"call": call, "want": want, "name": name, "shape": list(x.shape), "per_sample": per_sample}
    owner = frame.locals.get("self")
    linears = [m for m in owner.modules() if isinstance(m, torch.nn.Linear) and m.in_features == want] if isinstance(owner, torch.nn.Module) else []
    if len(linears) == 1:
        return Explanation(SHAPE, fields | {"layer": module_label(linears[0], session)}, variant="flatten-size")
    return Explanation(SHAPE, fields, variant="flatten-size-no-layer")


def rnn_batch_first(crash: Crash, session: Holdings | None) -> Explanation | None:
    """An RNN built without `batch_first=True` fed (batch, seq, features) with a hidden state
    built for that batch: it wants the hidden state's batch to be the input's dim 1."""
    match = _HIDDEN.search(crash.message)
    torch = torch_module()
    rnn = innermost_module(crash, torch.nn.RNNBase) if match is not None and torch is not None else None
    if match is None or rnn is None or rnn.batch_first:
        return None  # a batch_first layer: the hidden state is wrong for another reason (a short last batch)
    want, got = ([int(d) for d in match[key].split(",")] for key in ("want", "got"))
    x = next((f.locals["input"] for f in crash.deepest() if f.locals.get("self") is rnn and "input" in f.locals), None)
    if not isinstance(x, torch.Tensor) or x.dim() != 3 or len(want) != 3 or len(got) != 3:
        return None
    batch, seq = int(x.shape[0]), int(x.shape[1])
    if batch == seq or want != [got[0], seq, got[2]] or got[1] != batch:
        return None
    layer, kind = module_label(rnn, session), type(rnn).__name__
    built = _built_at(crash, rnn)
    crashed = crashes_at(crash) if built is not None else ""
    return Explanation(BATCH_MIXED, {"layer": layer, "shape": list(x.shape), "batch": batch, "seq": seq, "hidden": got,
                                     "crashed": crashed, "kind": kind}, at=built, variant="rnn-not-batch-first")


def rnn_hidden_batch(crash: Crash, session: Holdings | None) -> Explanation | None:
    """A hidden state made for another batch than the input's (the input's batch read as the
    layer reads it): pointed at the user's line that made it (a fixed batch size, or the state
    an earlier batch left)."""
    match = _HIDDEN.search(crash.message)
    torch = torch_module()
    rnn = innermost_module(crash, torch.nn.RNNBase) if match is not None and torch is not None else None
    if match is None or rnn is None:
        return None
    want, got = ([int(d) for d in match[key].split(",")] for key in ("want", "got"))
    frame = next((f for f in crash.deepest() if f.locals.get("self") is rnn and "input" in f.locals), None)
    x = frame.locals["input"] if frame is not None else None
    if not isinstance(x, torch.Tensor) or x.dim() != 3 or len(want) != 3 or len(got) != 3:
        return None
    batch = int(x.shape[0] if rnn.batch_first else x.shape[1])
    if want != [got[0], batch, got[2]] or got[1] == batch:
        return None
    held = next((f.locals.get("hx", f.locals.get("hidden")) for f in crash.deepest() if f.locals.get("self") is rnn
                 and ("hx" in f.locals or "hidden" in f.locals)), None)  # the state as forward() got it
    hidden = held[int(match["index"] or 0)] if isinstance(held, tuple) else held
    origin = origin_of(crash, hidden, _made_by_call) if isinstance(hidden, torch.Tensor) else None
    fields = {"layer": module_label(rnn, session), "hidden_batch": got[1], "batch": batch, "hidden": got,
              "made": made_here(origin, "made", crash) if origin is not None else ""}
    return Explanation(SHAPE, fields, at=(origin.file, origin.line) if origin is not None else None, variant="rnn-hidden-batch")


def _made_by_call(node: ast.expr, resolve: Any) -> bool | None:
    """Any call that is not a view or a copy of its receiver made the value (`torch.zeros(...)`,
    `model.init_hidden(batch_size)`, the RNN whose output it is)."""
    if isinstance(node, ast.Call):
        func = node.func
        return None if isinstance(func, ast.Attribute) and func.attr in KEEPING else True
    return None


def _built_at(crash: Crash, layer: Any) -> tuple[str, int] | None:
    """The line that built `layer` in the `__init__` of the user's module whose forward called it."""
    torch = torch_module()
    for frame in crash.deepest():
        owner = frame.locals.get("self")
        if is_user_file(frame.file) and torch is not None and isinstance(owner, torch.nn.Module) and owner is not layer:
            built = child_built_at(owner, layer)
            if built is not None:
                return built
    return None


def _unbatched_input(crash: Crash, conv: Any) -> Any:
    """The input a convolution got without a batch dimension (Conv2d given (16, 28, 28)): torch
    then reads dim 0 as channels, and its error shows the shape with a batch of 1 added."""
    if conv is None:
        return None
    for frame in crash.deepest():
        if id(frame.locals.get("self")) != id(conv):  # (`is not` would narrow `conv` to what the locals hold)
            continue
        value: Any = frame.locals.get("input")
        if getattr(value, "dim", None) is not None and value.dim() == conv.weight.dim() - 1:
            return value
    return None


def embedding_index(crash: Crash, session: Holdings | None) -> Explanation | None:
    if crash.exc_type != "IndexError" or "index out of range in self" not in crash.message:
        return None
    torch = torch_module()
    embedding = innermost_module(crash, torch.nn.Embedding) if torch is not None else None
    if embedding is None:
        return None
    ids = crash.find_local(torch.Tensor, "input")
    largest = int(ids.max()) if ids is not None and ids.numel() else None
    smallest = int(ids.min()) if ids is not None and ids.numel() else None
    bad = largest if largest is not None and largest >= embedding.num_embeddings else smallest
    return Explanation(
        EMBEDDING,
        {"layer": module_label(embedding, session), "index": bad if bad is not None else "an id", "size": embedding.num_embeddings, "last": embedding.num_embeddings - 1},
    )


def _device(text: str | None) -> str:
    if text is None:
        return "cpu"
    return "cuda" if text == "cuda." else text


def _pick(crash: Crash, session: Holdings | None, wanted: Any) -> tuple[str, Any] | None:
    """The first tensor near the failure that satisfies `wanted`, with its best name; tensors
    the user's own frame names come first."""
    known = user_names(crash)
    torch = torch_module()
    candidates = list(tensors_near(crash))
    # the user's own variables first, then parameters, then whatever torch's frames hold
    candidates.sort(key=lambda item: (id(item[1]) not in known, not isinstance(item[1], torch.nn.Parameter)))
    for name, tensor, _frame in candidates:
        try:
            if wanted(tensor):
                return describe(name, tensor, crash, session), tensor
        except Exception:  # noqa: BLE001, S112 - an odd tensor subclass: try the next one
            continue
    return None


def _where(crash: Crash, session: Holdings | None) -> str:
    module = innermost_module(crash)
    return f" in {module_label(module, session)}" if module is not None else ""


def _is_param(tensor: Any) -> bool:
    torch = torch_module()
    return torch is not None and isinstance(tensor, torch.nn.Parameter)


def _producer(tensor: Any) -> str:
    node = getattr(tensor, "grad_fn", None)
    name = type(node).__name__ if node is not None else ""
    for op in ("Transpose", "Permute", "Expand", "T", "Slice", "AsStrided", "Unfold", "Diagonal"):
        if name.startswith(op + "Backward"):
            return {"T": "transpose"}.get(op, op.lower())
    return ""


#: where these explainers are tried: lower first (core/plugins.py)
ORDER = 70
EXPLAINERS = (device_mismatch, dtype_mismatch, embedding_indices_dtype, view_of_non_contiguous, shape_mismatch, conv_dimensions,
              rnn_dimensions, flatten_size, feature_count, rnn_batch_first, rnn_hidden_batch, embedding_index)
