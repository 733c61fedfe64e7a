"""Light data flow: what kind of value an expression holds (model, loss, optimizer, ...).

Kinds come from what made the value: a constructor (`nn.CrossEntropyLoss()`, `torch.optim.SGD(...)`,
`DataLoader(...)`), a call of a value of known kind (calling a loss module gives a loss value),
a softmax or sigmoid, or a variable assigned one of those earlier in the same function (or at
module level). No types are inferred beyond that: unknown stays unknown (None).
"""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from torchdoctor.linter.model import Kind
from torchdoctor.linter.names import dotted, keyword

if TYPE_CHECKING:
    from torchdoctor.linter.state import WalkState

SOFTMAX = frozenset({"torch.softmax", "torch.nn.functional.softmax", "torch.special.softmax", "torch.Tensor.softmax"})
LOG_SOFTMAX = frozenset({"torch.log_softmax", "torch.nn.functional.log_softmax", "torch.special.log_softmax"})
SIGMOID = frozenset({"torch.sigmoid", "torch.nn.functional.sigmoid", "torch.special.expit"})
LOSS_FUNCTIONS = frozenset({
    "cross_entropy", "nll_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits", "mse_loss",
    "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div", "poisson_nll_loss", "gaussian_nll_loss",
    "margin_ranking_loss", "hinge_embedding_loss", "soft_margin_loss", "multilabel_soft_margin_loss",
    "cosine_embedding_loss", "multi_margin_loss", "triplet_margin_loss", "ctc_loss", "multilabel_margin_loss",
})
SCALERS = frozenset({"torch.cuda.amp.GradScaler", "torch.amp.GradScaler", "torch.GradScaler", "torch.cpu.amp.GradScaler"})
SAMPLERS = frozenset({"torch.utils.data.distributed.DistributedSampler", "torch.utils.data.DistributedSampler"})
RNGS = frozenset({"numpy.random.default_rng", "numpy.random.RandomState", "numpy.random.Generator",
                  "random.Random", "torch.Generator"})
CHECKPOINT_LOADERS = frozenset({"torch.load", "safetensors.torch.load_file", "safetensors.torch.load",
                                "torch.hub.load_state_dict_from_url", "torch.utils.model_zoo.load_url"})
DATASET_BASES = frozenset({"torch.utils.data.Dataset", "torch.utils.data.IterableDataset"})
MODULE_BASES = frozenset({
    "torch.nn.Module", "torch.jit.ScriptModule", "lightning.pytorch.LightningModule", "lightning.LightningModule",
    "lightning.pytorch.core.LightningModule", "lightning.pytorch.core.module.LightningModule",
})
#: nn classes that are not layers (so calling them does not make a model)
_NOT_MODULES = frozenset({"Parameter", "ParameterList", "ParameterDict", "Buffer", "init", "utils", "functional"})
#: methods that keep what a tensor *is* (probabilities stay probabilities through a reshape)
KEEPS_KIND = frozenset({
    "view", "reshape", "squeeze", "unsqueeze", "flatten", "contiguous", "float", "double", "half", "bfloat16",
    "to", "cuda", "cpu", "clone", "permute", "transpose", "view_as", "reshape_as", "type", "type_as",
    "clamp", "clamp_min", "clip", "squeeze_", "unsqueeze_", "expand", "expand_as", "mean", "sum",
})
#: of those, the ones that change the values (a model's output clamped is no longer its raw output)
_CHANGES_VALUES = frozenset({"clamp", "clamp_min", "clip", "mean", "sum"})
#: Module methods that return the module itself
MODULE_METHODS = frozenset({"to", "cuda", "cpu", "float", "double", "half", "bfloat16", "train", "eval",
                            "requires_grad_", "to_empty", "share_memory"})
#: calls that wrap a model and keep what it outputs
WRAPPERS = frozenset({"torch.nn.DataParallel", "torch.nn.parallel.DistributedDataParallel",
                      "torch.nn.parallel.DataParallel", "torch.compile"})
#: wrappers whose first argument is what a `for` loop really iterates
ITER_WRAPPERS = frozenset({"enumerate", "tqdm", "iter", "zip", "tqdm.tqdm", "tqdm.auto.tqdm", "tqdm.notebook.tqdm",
                           "tqdm.rich.tqdm", "rich.progress.track", "itertools.islice", "islice"})
_OPTIMIZER_NAME = re.compile(r"(^|_)(optim|optimi[sz]er|opt)(s|_?[a-z0-9]*)?$|(^|_)(optim|optimi[sz]er)(_|$)", re.I)
_LOADER_NAME = re.compile(r"loader|dataloader", re.I)
#: names of held-out data (the last part of a dotted name): `test_loader`, `val_set`, `testloader`, `dev_data`
_HELD_OUT = re.compile(r"^(test|val|valid|validation|eval|evaluation|dev)(_|$|loader|set|data)", re.I)


def looks_like_optimizer(dotted_name: str | None) -> bool:
    """Names people give optimizers: `optimizer`, `opt`, `self.optim`, `optimizer_g`, `d_opt`."""
    if not dotted_name:
        return False
    last = dotted_name.rpartition(".")[2]
    return bool(_OPTIMIZER_NAME.search(last)) and "sched" not in last.lower()


def looks_like_loader(dotted_name: str | None) -> bool:
    return bool(dotted_name) and bool(_LOADER_NAME.search(dotted_name.rpartition(".")[2]))  # type: ignore[union-attr]


def held_out_loader(loader: ast.expr, kind: Kind, ctx: WalkState) -> bool:
    """A DataLoader over held-out data: its dataset built with `train=False` (torchvision), or
    the loader or the dataset named for testing or validation (`test_loader`, `val_set`)."""
    names = [dotted(loader)]
    if isinstance(kind.node, ast.Call):
        dataset = keyword(kind.node, "dataset") or (kind.node.args[0] if kind.node.args else None)
        made = kind_of(dataset, ctx) if dataset is not None else None
        built = made.node if made is not None and made.tag == "dataset" else None
        if isinstance(built, ast.Call) and any(k.arg == "train" and isinstance(k.value, ast.Constant)
                                               and k.value.value is False for k in built.keywords):
            return True
        names.append(dotted(dataset) if dataset is not None else None)
    return any(name and _HELD_OUT.search(name.rpartition(".")[2]) for name in names)


def constructor_kind(qualified: str, call: ast.Call, ctx: WalkState) -> Kind | None:
    """The kind of value a call of the qualified name `qualified` returns, if it is known."""
    head, _, last = qualified.rpartition(".")
    if head == "torch.nn":
        if last.endswith("Loss"):
            return Kind("loss_fn", last, call)
        if last in ("Softmax", "Softmax2d"):
            return Kind("model", "probs", call)
        if last == "LogSoftmax":
            return Kind("model", "log_probs", call)
        if last == "Sigmoid":
            return Kind("model", "sigmoid", call)
        if last == "Sequential":
            return Kind("model", _sequential_output(call, ctx), call)
        if last in ("Parameter", "ParameterList", "ParameterDict"):
            return Kind("parameter", last if last != "Parameter" else "", call)
        if last[:1].isupper() and last not in _NOT_MODULES:
            return Kind("model", "", call)
        return None
    if head == "torch.nn.functional":
        if last in LOSS_FUNCTIONS:
            return Kind("loss", last, call)
    if qualified in SOFTMAX:
        return Kind("probs", "", call)
    if qualified in LOG_SOFTMAX:
        return Kind("log_probs", "", call)
    if qualified in SIGMOID:
        return Kind("sigmoid", "", call)
    if head == "torch.optim.lr_scheduler":
        return Kind("scheduler", last, call)
    if head == "torch.optim" and last[:1].isupper():
        return Kind("optimizer", last, call)
    if qualified == "torch.utils.data.DataLoader":
        return Kind("dataloader", "", call)
    if qualified in SAMPLERS:
        return Kind("sampler", "DistributedSampler", call)
    if qualified in SCALERS:
        return Kind("scaler", "", call)
    if qualified in RNGS:
        return Kind("rng", last, call)
    if qualified in CHECKPOINT_LOADERS:
        return Kind("checkpoint", "", call)
    if head == "torchvision.datasets" and last[:1].isupper():
        return Kind("dataset", last, call)
    if qualified.startswith("torchvision.models.") and last[:1].islower():
        return Kind("model", "", call)
    return None


def _sequential_output(call: ast.Call, ctx: WalkState) -> str:
    """What an `nn.Sequential(...)` returns: its last layer's output kind."""
    if not call.args or isinstance(call.args[-1], ast.Starred):
        return ""
    last = kind_of(call.args[-1], ctx)
    return last.detail if last is not None and last.tag == "model" else ""


def kind_of(node: ast.expr, ctx: WalkState) -> Kind | None:
    """The kind of value `node` evaluates to, or None when the source does not say."""
    cls = node.__class__
    if cls is ast.Name:
        return ctx.lookup(node.id)  # type: ignore[attr-defined]
    if cls is ast.Call:
        return _call_kind(node, ctx)  # type: ignore[arg-type]
    if cls is ast.Attribute:
        value = node.value  # type: ignore[attr-defined]
        if value.__class__ is ast.Name and value.id == "self" and ctx.class_info is not None:
            return ctx.class_info.attributes.get(node.attr)  # type: ignore[attr-defined]
        return None
    if cls is ast.Subscript:
        inner = kind_of(node.value, ctx)  # type: ignore[attr-defined]
        if inner is None:
            return None
        if inner.tag in ("mapping", "tuple"):
            key = node.slice  # type: ignore[attr-defined]
            return inner.item(key.value) if isinstance(key, ast.Constant) else None
        if inner.tag in ("probs", "sigmoid", "log_probs", "batch", "output", "checkpoint"):
            return inner
        return None
    if cls is ast.Dict:
        items = tuple((k.value, kind_of(v, ctx)) for k, v in zip(node.keys, node.values)  # type: ignore[attr-defined]
                      if isinstance(k, ast.Constant))
        return Kind("mapping", "", node, items) if any(kind for _, kind in items) else None
    if cls is ast.Tuple:
        items = tuple((index, kind_of(e, ctx)) for index, e in enumerate(node.elts))  # type: ignore[attr-defined]
        return Kind("tuple", "", node, items) if any(kind for _, kind in items) else None
    if cls is ast.BinOp:
        left = kind_of(node.left, ctx)  # type: ignore[attr-defined]
        if left is not None and left.tag == "loss":
            return left
        right = kind_of(node.right, ctx)  # type: ignore[attr-defined]
        if right is not None and right.tag == "loss":
            return right
        return None
    return None


def _call_kind(call: ast.Call, ctx: WalkState) -> Kind | None:
    func = call.func
    if func.__class__ is ast.Attribute:
        attr = func.attr
        base = func.value
        qualified = ctx.qualified(func) if _rooted_in_import(base, ctx) else None
        if qualified is not None:
            if qualified in WRAPPERS and call.args:
                return kind_of(call.args[0], ctx)
            return constructor_kind(qualified, call, ctx)
        if attr == "softmax":
            return Kind("probs", "", call)
        if attr == "sigmoid":
            return Kind("sigmoid", "", call)
        if attr == "log_softmax":
            return Kind("log_probs", "", call)
        if attr == "scale" and call.args and is_scaler(base, ctx):
            return Kind("loss", "scaled", call)  # `scaler.scale(loss)`: the loss, multiplied by the scale
        if attr in KEEPS_KIND or attr in MODULE_METHODS:
            inner = kind_of(base, ctx)
            if inner is None:
                return None
            if inner.tag == "model":
                return inner if attr in MODULE_METHODS else None
            if inner.tag == "output":  # a model's raw output stays one through a reshape, not a clamp or a mean
                return inner if attr in KEEPS_KIND and attr not in _CHANGES_VALUES else None
            return inner if inner.tag in ("probs", "sigmoid", "log_probs", "loss", "batch") and attr in KEEPS_KIND else None
        if attr in ("get", "pop", "copy"):
            inner = kind_of(base, ctx)
            return inner if inner is not None and inner.tag == "checkpoint" else None
        if base.__class__ is ast.Name and base.id == "self" and ctx.class_info is not None:
            method = ctx.methods.get((id(ctx.class_info), attr))
            if method is not None:  # `self.predict(x)`: what the method (seen above) returns
                return _returned(method.returns)
        if attr in ("forward", "__call__"):
            return _called(kind_of(base, ctx), call)
        return _called(kind_of(func, ctx), call)
    if func.__class__ is ast.Name:
        name = func.id
        qualified = ctx.imports.names.get(name)
        if qualified is not None:
            if qualified in WRAPPERS and call.args:
                return kind_of(call.args[0], ctx)
            return constructor_kind(qualified, call, ctx)
        function = ctx.functions.get(name)
        if function is not None:
            return _returned(function.returns)
        local = ctx.classes.get(name)
        if local is not None:
            if local.is_module:
                return Kind("model", local.output, local.output_node or call, local.output_items)
            if local.is_dataset:
                return Kind("dataset", name, call)
            return None
        if name == "self" and ctx.class_info is not None:  # `self(x)` in a LightningModule's step
            method = ctx.methods.get((id(ctx.class_info), "forward"))
            return _returned(method.returns) if method is not None else None
        return _called(ctx.lookup(name), call)
    return None


def is_scaler(node: ast.expr, ctx: WalkState) -> bool:
    """A GradScaler by construction, or by name when its construction is not in sight."""
    kind = kind_of(node, ctx)
    if kind is not None:
        return kind.tag == "scaler"
    return "scaler" in (dotted(node) or "").rpartition(".")[2].lower()


def _returned(returns: list[Kind | None]) -> Kind | None:
    """What a function of this file returns, when all its `return`s agree on the kind."""
    kinds = [k for k in returns if k is not None]
    if not kinds or len({k.tag for k in kinds}) != 1 or len(kinds) != len(returns):
        return None
    return kinds[0]


#: what a model's output can be known to be, item by item (see `agreed_items`)
_OUTPUT_TAGS = frozenset({"probs", "sigmoid", "log_probs"})


def agreed_items(returns: list[Kind]) -> tuple[tuple[object, Kind | None], ...]:
    """The items of a `forward` that returns tuples: for each position, the probabilities (or
    sigmoid, log-probabilities) that *every* `return` puts there; () when no position agrees."""
    lengths = {len(k.items) for k in returns}
    if len(lengths) != 1:
        return ()
    items: list[tuple[object, Kind | None]] = []
    for index in range(lengths.pop()):
        kinds = [k.items[index][1] for k in returns]
        tags = {k.tag if k is not None else "" for k in kinds}
        items.append((index, kinds[0] if len(tags) == 1 and tags <= _OUTPUT_TAGS else None))
    return tuple(items) if any(kind for _, kind in items) else ()


def _called(callee: Kind | None, call: ast.Call) -> Kind | None:
    """Calling a value: a loss module gives a loss value, a model gives its output."""
    if callee is None:
        return None
    if callee.tag == "loss_fn":
        return Kind("loss", callee.detail, call)
    if callee.tag == "model":
        if callee.detail == "tuple":
            return Kind("tuple", "", call, callee.items)  # `validity, label = discriminator(x)`
        if callee.detail:
            return Kind(callee.detail, "model", callee.node)  # made by the model: point at the model
        return Kind("output", "", call)
    return None


def _rooted_in_import(node: ast.expr, ctx: WalkState) -> bool:
    while node.__class__ is ast.Attribute:
        node = node.value
    return node.__class__ is ast.Name and node.id in ctx.imports.names


def loop_iterable(node: ast.expr, ctx: WalkState) -> ast.expr | None:
    """What a `for` loop really iterates, under `enumerate(...)`, `tqdm(...)`, `zip(...)` (their
    first argument); None when a wrapper's argument cannot be read."""
    while node.__class__ is ast.Call and node.args and _callee(node, ctx) in ITER_WRAPPERS:
        first = node.args[0]
        if isinstance(first, ast.Starred):
            return None
        node = first
    return node


def _callee(call: ast.Call, ctx: WalkState) -> str | None:
    func = call.func
    return ctx.qualified(func) or getattr(func, "id", None) or getattr(func, "attr", None)


def iterated(node: ast.expr, ctx: WalkState) -> tuple[str, str | None]:
    """What a `for` loop iterates: ("dataloader" | "range" | "other", dotted name of the iterable)."""
    iterable = loop_iterable(node, ctx)
    if iterable is None:
        return "other", None
    kind = kind_of(iterable, ctx)
    if iterable.__class__ is ast.Call:
        if _callee(iterable, ctx) in ("range", "builtins.range"):
            return "range", None
        return ("dataloader" if kind is not None and kind.tag == "dataloader" else "other"), None
    name = dotted(iterable)
    if kind is not None and kind.tag == "dataloader" or looks_like_loader(name):
        return "dataloader", name
    return "other", name


#: names people give class labels (the last part of a dotted name)
_LABEL_NAME = re.compile(r"^(y|y_true|gt|labels?|targets?|tgts?|classes|class_ids?|[a-z0-9]+_(labels?|targets?))$", re.I)
#: calls that keep a tensor's meaning (labels stay labels)
_LABEL_KEEPS = frozenset({"view", "reshape", "flatten", "squeeze", "unsqueeze", "long", "to", "cuda", "cpu", "contiguous",
                          "view_as", "reshape_as", "type", "type_as", "detach"})


def holds_labels(node: ast.expr, ctx: WalkState) -> bool:
    """The value is labels: drawn from a DataLoader, or named so (through `.view()`-style calls
    and indexing: `targets.view(-1)`, `batch["labels"]`)."""
    kind = kind_of(node, ctx)
    if kind is not None:
        return kind.tag == "batch"
    while True:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _LABEL_KEEPS:
            node = node.func.value
        elif isinstance(node, ast.Subscript):
            key = node.slice
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                return bool(_LABEL_NAME.match(key.value))
            node = node.value
        else:
            break
    name = dotted(node)
    return name is not None and bool(_LABEL_NAME.match(name.rpartition(".")[2]))
