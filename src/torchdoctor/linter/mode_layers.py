"""Which models of a file have layers whose output depends on train/eval mode, and whether
the file switches modes at all: what the mode rules of lint (TD133, TD340) read."""

from __future__ import annotations

import ast

from torchdoctor.linter.context import Context
from torchdoctor.linter.model import ClassInfo, Kind, Scope
from torchdoctor.linter.names import dotted

#: layers that behave differently in train and eval mode
DROPOUTS = frozenset({"Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"})
BATCHNORMS = frozenset({"BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm"})
#: torchvision model builders by name prefix -> the train/eval-dependent layers they contain
_TORCHVISION = (
    (("resnet", "resnext", "wide_resnet", "regnet", "mobilenet", "efficientnet", "densenet", "shufflenet",
      "mnasnet", "googlenet", "inception"), {"BatchNorm2d"}),
    (("alexnet", "squeezenet"), {"Dropout"}),
)


def mode_layers(scope: Scope, name: str, ctx: Context) -> frozenset[str]:
    """The train/eval-dependent layer classes (`Dropout`, `BatchNorm2d`) of the model `name`
    (`model`, `self.net`) holds in `scope`, as far as the file shows."""
    kind = scope.bindings.get(name) if "." not in name else None
    if kind is None and name.startswith("self.") and scope.cls is not None:
        kind = scope.cls.attributes.get(name[5:])
    if kind is None and "." not in name:
        kind = ctx.module_scope.bindings.get(name)
    return _kind_layers(kind, ctx) if kind is not None and kind.tag == "model" else frozenset()


def switches_mode(ctx: Context) -> bool:
    """Any `x.eval()` or `x.train(...)` with an argument in the file: modes are handled somewhere.
    Read from the walk's events, which are calls: a comment or a string saying `model.eval()` is none."""
    for scope in ctx.scopes:
        for event in scope.events:
            call = event.node
            if event.name in ("eval", "train") and isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute):
                if (event.name == "eval") is not bool(call.args or call.keywords):
                    return True
    return False


def _kind_layers(kind: Kind, ctx: Context) -> frozenset[str]:
    """The train/eval-dependent layer classes of the model `kind` holds (none when the file does not show)."""
    made = kind.node
    while isinstance(made, ast.Call) and isinstance(made.func, ast.Attribute) and isinstance(made.func.value, ast.Call):
        made = made.func.value  # `Net().to(device)`, `Net().cuda().float()`: the model is the innermost call
    if not isinstance(made, ast.Call):
        made_in = _class_around(kind.node, ctx) if kind.node is not None else None
        layers = _layers(made_in.node, ctx) if made_in is not None and made_in.is_module else set()
    else:
        qualified = ctx.qualified(made.func) or ""
        if qualified.startswith("torchvision.models."):
            layers = _torchvision_layers(qualified.rpartition(".")[2])
        elif qualified == "torch.nn.Sequential":
            layers = _layers(made, ctx)
        else:
            info = ctx.classes.get(dotted(made.func) or "") or _class_around(made, ctx)
            layers = _layers(info.node, ctx) if info is not None and info.is_module else set()
    return frozenset(layers)


def _torchvision_layers(builder: str) -> set[str]:
    if builder.startswith("vgg"):
        return {"Dropout", "BatchNorm2d"} if builder.endswith("_bn") else {"Dropout"}
    for prefixes, layers in _TORCHVISION:
        if builder.startswith(prefixes):
            return set(layers)
    return set()  # ViT, Swin, ConvNeXt, ...: no batch-norm, dropout off by default


def _class_around(node: ast.AST, ctx: Context) -> ClassInfo | None:
    """The class of this file whose code holds `node` (a model's kind may point at the softmax
    its forward() returns rather than at its construction)."""
    line = getattr(node, "lineno", 0)
    for info in ctx.classes.values():
        if info.node.lineno <= line <= (info.node.end_lineno or info.node.lineno):
            return info
    return None


def _layers(node: ast.AST, ctx: Context) -> set[str]:
    """The `torch.nn` layer classes built under `node` that behave differently in eval mode."""
    found = set()
    for inner in ast.walk(node):
        if isinstance(inner, ast.Call):
            qualified = ctx.qualified(inner.func) or ""
            name = qualified.rpartition(".")[2]
            if qualified.startswith("torch.nn.") and name in DROPOUTS | BATCHNORMS:
                found.add(name)
    return found
