"""Crashes about what a loss (or a batch-norm layer) is given: targets and batch sizes."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Any

from torchdoctor.core.locate import is_user_file
from torchdoctor.introspect.source import module_tree, scope_of
from torchdoctor.observe.crash.describe import (
    dtype_name,
    innermost_module,
    module_label,
    tensor_dtype,
    torch_module,
    user_names,
)
from torchdoctor.observe.crash.explain import Explanation
from torchdoctor.observe.crash.model import Crash
from torchdoctor.observe.crash.provenance import converts_to, crashes_at, label_arithmetic, made_here, origin_of
from torchdoctor.rules.data.batchnorm_batch_of_one import RULE as BATCH_OF_ONE
from torchdoctor.rules.dtype.binary_target_not_float import RULE as BINARY_TARGET_DTYPE
from torchdoctor.rules.dtype.class_target_not_integer import RULE as TARGET_DTYPE
from torchdoctor.rules.loss.class_target_out_of_range import RULE as OUT_OF_RANGE
from torchdoctor.rules.loss.class_target_shape_mismatch import RULE as TARGET_SHAPE
from torchdoctor.rules.loss.logits_into_bce_loss import CPU_ERROR, GPU_ERROR, scores_text
from torchdoctor.rules.loss.logits_into_bce_loss import RULE as LOGITS_INTO_BCE
from torchdoctor.rules.loss.loss_arguments_swapped import RULE as SWAPPED
from torchdoctor.rules.loss.loss_target_broadcast import RULE as BROADCAST

if TYPE_CHECKING:
    from torchdoctor.observe.instruments.data import LoaderFacts
    from torchdoctor.observe.observed import Holdings

_OUT_OF_BOUNDS = re.compile(r"Target (?P<label>-?\d+) is out of bounds")
_TARGET_DTYPE = re.compile(r"expected target dtype to be Long or Byte, but got (?P<dtype>\w+)|expected scalar type Long but found (?P<old>\w+)")
_TARGET_SIZE = re.compile(r"Expected target size \[(?P<want>[\d, ]+)\], got \[(?P<got>[\d, ]+)\]")
_BATCH_SIZE = re.compile(r"Expected input batch_size \((?P<input>\d+)\) to match target batch_size \((?P<target>\d+)\)")
#: NLLLoss given a target of more than one dimension (on torch 2.13, also its reply to swapped arguments)
_MULTI_TARGET = "multi-target not supported"
_BATCH_OF_ONE = re.compile(r"Expected more than 1 value per channel when training, got input size torch\.Size\(\[(?P<shape>[\d, ]+)\]\)")


def target_out_of_range(crash: Crash, session: Holdings | None) -> Explanation | None:
    match = _OUT_OF_BOUNDS.search(crash.message)
    device_assert = "t >= 0 && t < n_classes" in crash.message
    if match is None and not device_assert:
        return None
    logits, target = _loss_arguments(crash)
    classes = int(logits.shape[1] if logits.dim() > 1 else logits.shape[0]) if logits is not None else None
    label = int(match["label"]) if match else None
    if target is not None and target.numel():
        label = int(target.max()) if classes is None or int(target.max()) >= classes else int(target.min())
    ignored = label is not None and label < 0
    fields: dict[str, Any] = {
        "max_label": label if label is not None else "a label",
        "num_classes": classes if classes is not None else "fewer",
        "last": classes - 1 if classes is not None else "C-1",
    }
    origin = origin_of(crash, target, label_arithmetic) if target is not None else None
    if origin is None:
        return Explanation(OUT_OF_RANGE, fields, variant="ignore-label" if ignored else None)
    fields |= {"made": made_here(origin, "labels shifted", crash)} | ({} if ignored else {"shift": origin.text})
    return Explanation(OUT_OF_RANGE, fields, variant="shifted-ignore-label" if ignored else "shifted",
                       at=(origin.file, origin.line), evidence={"made_at": origin.place, "made_by": origin.text})


def target_dtype(crash: Crash, session: Holdings | None) -> Explanation | None:
    match = _TARGET_DTYPE.search(crash.message)
    if match is None:
        return None
    dtype = dtype_name(match["dtype"] or match["old"])
    fields = {"loss": _loss_name(crash), "dtype": dtype}
    found = _loss_frame(crash, _CLASS_LOSSES)
    target = found[2] if found is not None else None
    origin = origin_of(crash, target, converts_to(tensor_dtype(target))) if hasattr(target, "dtype") else None
    if origin is None:
        return Explanation(TARGET_DTYPE, fields)
    made = tensor_dtype(target)
    return Explanation(TARGET_DTYPE, fields | {"made": made_here(origin, f"made {made}", crash), "conversion": origin.text,
                                               "made_dtype": made},
                       variant="converted", at=(origin.file, origin.line),
                       evidence={"made_at": origin.place, "made_by": origin.text})


def target_shape(crash: Crash, session: Holdings | None) -> Explanation | None:
    match = _TARGET_SIZE.search(crash.message)
    if match:
        want = [int(d) for d in match["want"].split(",")]
        got = [int(d) for d in match["got"].split(",")]
        logits, _ = _loss_arguments(crash)
        shape = list(logits.shape) if logits is not None else None
        if shape is not None and len(shape) == 3 and got == [shape[0], shape[1]]:
            return Explanation(TARGET_SHAPE, {"loss": _loss_name(crash), "shape": shape}, variant="classes-last")
        return Explanation(TARGET_SHAPE, {"loss": _loss_name(crash), "got": got, "want": want})
    match = _BATCH_SIZE.search(crash.message)
    if match:
        fields = {"loss": _loss_name(crash), "rows": match["input"], "targets": match["target"]}
        rows, targets = int(match["input"]), int(match["target"])
        folded = _folding_view(session) if targets and rows > targets and rows % targets == 0 else None
        if folded is not None:
            cls, call, at = folded
            return Explanation(TARGET_SHAPE, fields | {"call": call, "cls": cls, "fold": rows // targets, "crashed": crashes_at(crash)},
                               at=at, variant="folded-batch")
        return Explanation(TARGET_SHAPE, fields, variant="batch-sizes-differ")
    if "Expected floating point type for target with class probabilities" in crash.message:
        return Explanation(TARGET_SHAPE, {"loss": _loss_name(crash)}, variant="integer-probabilities")
    if _MULTI_TARGET in crash.message:
        return _column_target(crash)
    return None


def _column_target(crash: Crash) -> Explanation | None:
    """Class indices of shape (N, 1) for logits of shape (N, C): "multi-target not supported"."""
    found = _loss_frame(crash, _CLASS_LOSSES)
    if found is None:
        return None
    loss, logits, target = found
    if not (hasattr(logits, "is_floating_point") and hasattr(target, "is_floating_point")):
        return None
    if not logits.is_floating_point() or logits.dim() != 2 or target.dim() != 2:
        return None
    if target.shape[1] != 1 or target.shape[0] != logits.shape[0]:
        return None
    name = user_names(crash).get(id(target), "target")
    fields = {"loss": loss, "name": name, "got": list(target.shape), "rows": int(logits.shape[0])}
    if not target.is_floating_point():
        return Explanation(TARGET_SHAPE, fields, variant="column-target")
    if _class_indices(target, int(logits.shape[1])):
        return Explanation(TARGET_SHAPE, fields, variant="float-column-target")
    return None


def _class_indices(values: Any, classes: int) -> bool:
    """Floats that are class indices: whole numbers in [0, classes)."""
    held = values.detach()
    return bool(held.numel()) and bool((held == held.round()).all()) and 0 <= float(held.min()) and float(held.max()) < classes


def _folding_view(session: Holdings | None) -> tuple[str, str, tuple[str, int]] | None:
    """(class, call, place) of the one `x.view(-1, n)` / `x.reshape(-1, n)` in the forward()s of
    the user's models: a flatten that folds what is left of a sample into more rows."""
    found: list[tuple[str, str, tuple[str, int]]] = []
    seen: set[type] = set()
    for root in session.model_roots() if session is not None else ():
        for module in root.modules():
            cls = type(module)
            code = getattr(getattr(cls, "forward", None), "__code__", None)
            if cls in seen or code is None or not is_user_file(code.co_filename):
                continue
            seen.add(cls)
            tree = module_tree(code.co_filename)
            function = scope_of(tree, code) if tree is not None else None
            for node in ast.walk(function) if function is not None else ():
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("view", "reshape")
                        and len(node.args) == 2 and ast.unparse(node.args[0]) == "-1"):
                    found.append((cls.__name__, " ".join(ast.unparse(node).split()), (code.co_filename, node.lineno)))
    return found[0] if len(found) == 1 else None


def batch_of_one(crash: Crash, session: Holdings | None) -> Explanation | None:
    match = _BATCH_OF_ONE.search(crash.message)
    if match is None:
        return None
    torch = torch_module()
    layer = innermost_module(crash, torch.nn.modules.batchnorm._BatchNorm) if torch is not None else None
    label = module_label(layer, session) if layer is not None else "a batch-norm layer"
    fields = {"layer": label, "shape": f"[{match['shape']}]"}
    loader = _short_last_batch(session)
    if loader is None:
        return Explanation(BATCH_OF_ONE, fields)
    return Explanation(BATCH_OF_ONE, fields | {"samples": loader.samples, "batch_size": loader.batch_size},
                       variant="short-last-batch", at=loader.site)


def _short_last_batch(session: Holdings | None) -> LoaderFacts | None:
    """The DataLoader that leaves a last batch of one sample, whose line is the one to change
    (the crash itself is raised deep inside the model)."""
    for loader in reversed(session.loaders.recent if session is not None else ()):
        size, batch = loader.samples, loader.batch_size
        if size and batch and size % batch == 1 and not loader.drop_last:
            return loader
    return None


def logits_into_bce(crash: Crash, session: Holdings | None) -> Explanation | None:
    """BCELoss given values outside [0, 1] (its input, not its target)."""
    if CPU_ERROR not in crash.message and GPU_ERROR not in crash.message:
        return None
    scores, _ = _loss_arguments(crash)
    readable = scores is not None and scores.numel() and not scores.is_cuda
    return Explanation(LOGITS_INTO_BCE, {"values": scores_text(scores) if readable else "values outside that range"})


def binary_target_dtype(crash: Crash, session: Holdings | None) -> Explanation | None:
    """BCELoss / BCEWithLogitsLoss given integer labels (the message only names dtypes)."""
    if "can't be cast to the desired output type" not in crash.message and "Found dtype" not in crash.message:
        return None
    found = _loss_frame(crash, _BINARY_LOSSES)
    if found is None:
        return None
    loss, _, target = found
    if not hasattr(target, "is_floating_point") or target.is_floating_point() or target.is_complex():
        return None
    return Explanation(BINARY_TARGET_DTYPE, {"loss": loss, "dtype": tensor_dtype(target)})


def arguments_swapped(crash: Crash, session: Holdings | None) -> Explanation | None:
    """`criterion(labels, logits)`: CrossEntropyLoss's log-softmax over integer labels, or
    NLLLoss refusing a target of more dimensions than its input ("multi-target")."""
    if "not implemented for" in crash.message and "softmax" in crash.message:
        found = _loss_frame(crash, ("cross_entropy",))
    elif _MULTI_TARGET in crash.message:
        found = _loss_frame(crash, _CLASS_LOSSES)
    else:
        return None
    if found is None:
        return None
    loss, values, target = found
    if not (hasattr(values, "is_floating_point") and hasattr(target, "is_floating_point")):
        return None
    # integer "input", floating-point "target" of more dimensions: labels and scores in the
    # wrong order (one-hot float targets after float scores are another mistake: not this one)
    if values.is_floating_point() or values.is_complex() or not target.is_floating_point():
        return None
    if _MULTI_TARGET in crash.message and target.dim() <= values.dim():
        return None
    return Explanation(SWAPPED, {
        "loss": loss,
        "input": f"{tensor_dtype(values)} {list(values.shape)}",
        "target": f"{tensor_dtype(target)} {list(target.shape)}",
    })


_SIZES = re.compile(r"The size of tensor a \(\d+\) must match the size of tensor b \(\d+\) at non-singleton dimension \d+"
                    r"|Target size \(torch\.Size\(\[[\d, ]*\]\)\) must be the same as input size"
                    r"|Using a target size \(torch\.Size\(\[[\d, ]*\]\)\) that is different to the input size")
#: element-wise losses (and the binary cross-entropies) whose input and target must have one shape
_ELEMENTWISE = {"mse_loss": "MSELoss", "l1_loss": "L1Loss", "smooth_l1_loss": "SmoothL1Loss", "huber_loss": "HuberLoss",
                "binary_cross_entropy_with_logits": "BCEWithLogitsLoss", "binary_cross_entropy": "BCELoss"}


def unpaired_shapes(crash: Crash, session: Holdings | None) -> Explanation | None:
    """An element-wise loss given an input and a target of shapes that cannot be paired."""
    if _SIZES.search(crash.message) is None:
        return None
    torch = torch_module()
    frame = next((f for f in crash.deepest() if f.function in _ELEMENTWISE), None)
    if torch is None or frame is None:
        return None
    values, target = frame.locals.get("input"), frame.locals.get("target")
    if not isinstance(values, torch.Tensor) or not isinstance(target, torch.Tensor) or values.shape == target.shape:
        return None
    a, b = list(values.shape), list(target.shape)
    fields: dict[str, Any] = {"loss": _ELEMENTWISE[frame.function], "input_shape": a, "target_shape": b}
    if a and b and a[0] != b[0]:
        return Explanation(BROADCAST, fields | {"input_rows": a[0], "target_rows": b[0]}, variant="cannot-pair-batch")
    if a[:-1] == b and a and a[-1] == 1 or b[:-1] == a and b and b[-1] == 1:
        column = values if len(a) > len(b) else target
        name = user_names(crash).get(id(column), "output" if column is values else "target")
        return Explanation(BROADCAST, fields | {"column": name, "axis": column.dim() - 1}, variant="cannot-pair-column")
    return Explanation(BROADCAST, fields, variant="cannot-pair")


def _loss_arguments(crash: Crash) -> tuple[Any, Any]:
    """(input, target) of the failing loss function call, from the live frames."""
    torch = torch_module()
    if torch is None:
        return None, None
    for frame in crash.deepest():
        local = frame.locals
        if isinstance(local.get("input"), torch.Tensor) and isinstance(local.get("target"), torch.Tensor):
            return local["input"], local["target"]
    return None, None


#: torch.nn.functional losses -> the module users write
_LOSSES = {"cross_entropy": "CrossEntropyLoss", "nll_loss": "NLLLoss",
           "binary_cross_entropy_with_logits": "BCEWithLogitsLoss", "binary_cross_entropy": "BCELoss"}
_CLASS_LOSSES = ("cross_entropy", "nll_loss")
_BINARY_LOSSES = ("binary_cross_entropy_with_logits", "binary_cross_entropy")


def _loss_frame(crash: Crash, functions: tuple[str, ...]) -> tuple[str, Any, Any] | None:
    """(the loss's name, its input, its target) for the innermost call of one of these
    functional losses in the crash's live frames."""
    for frame in crash.deepest():
        if frame.function in functions:
            return _LOSSES[frame.function], frame.locals.get("input"), frame.locals.get("target")
    return None


def _loss_name(crash: Crash) -> str:
    found = _loss_frame(crash, _CLASS_LOSSES)
    return found[0] if found is not None else "the loss"


#: where these explainers are tried: lower first (core/plugins.py)
ORDER = 60
EXPLAINERS = (target_out_of_range, target_dtype, target_shape, batch_of_one, logits_into_bce, binary_target_dtype, arguments_swapped,
              unpaired_shapes)
