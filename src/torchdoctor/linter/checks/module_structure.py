"""How an nn.Module is built: layers hidden in plain containers (TD122), trainable tensors
that are not parameters (TD123), a missing `super().__init__()` (TD158), layers created in
`forward` (TD159)."""

from __future__ import annotations

import ast

from torchdoctor.core.finding import Fix
from torchdoctor.linter.api import FILE_END, ClassInfo, Context, Kind, Scope, Severity, keyword, lint_check, literal
from torchdoctor.linter.names import dotted, terminal
from torchdoctor.rules.api.missing_super_init import RULE as MISSING_SUPER_INIT
from torchdoctor.rules.grad_flow.layer_created_in_forward import RULE as LAYER_CREATED_IN_FORWARD
from torchdoctor.rules.grad_flow.module_in_plain_container import RULE as MODULE_IN_PLAIN_CONTAINER
from torchdoctor.rules.grad_flow.tensor_attribute_not_parameter import RULE as TENSOR_ATTRIBUTE_NOT_PARAMETER

#: nn layers that own parameters: built in forward(), they are fresh and untrained every call
LAYERS_WITH_WEIGHTS = frozenset({
    "Linear", "Bilinear", "LazyLinear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
    "ConvTranspose3d", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "LayerNorm", "GroupNorm", "RMSNorm",
    "Embedding", "EmbeddingBag", "LSTM", "GRU", "RNN", "LSTMCell", "GRUCell", "RNNCell", "MultiheadAttention",
    "Transformer", "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer", "TransformerDecoderLayer",
    "PReLU",
})


def _is_module_class(info: ClassInfo | None) -> bool:
    return info is not None and info.looks_like_module


def _self_attribute(target: ast.expr) -> str | None:
    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
        return target.attr
    return None


def _registered(kind: Kind | None) -> str | None:
    """"module" / "parameter" when the value is one nn.Module registers, else None."""
    if kind is None:
        return None
    if kind.tag == "model":
        return "module"
    if kind.tag == "parameter":
        return "parameter"
    return None


def _elements(value: ast.expr, attribute: str | None = None) -> tuple[str, list[ast.expr]] | None:
    """(container name, element expressions) of a plain list/tuple/dict display or comprehension,
    also written as a call (`dict(a=layer)`, `list([...])`) or rebuilt by concatenation onto the
    attribute itself (`self.layers = self.layers + [Block()]`, when `attribute` is "layers")."""
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add) and attribute is not None:
        sides = [_elements(side, attribute) for side in (value.left, value.right)]
        others = [side for side, found in zip((value.left, value.right), sides) if found is None]
        if not any(sides) or any(_self_attribute(side) != attribute for side in others):
            return None
        kinds = {found[0] for found in sides if found is not None}
        return (kinds.pop() if len(kinds) == 1 else "list"), [e for found in sides if found is not None for e in found[1]]
    if isinstance(value, (ast.List, ast.Tuple)):
        return ("list" if isinstance(value, ast.List) else "tuple"), list(value.elts)
    if isinstance(value, ast.ListComp):
        return "list", [value.elt]
    if isinstance(value, ast.Dict):
        return "dict", [v for v in value.values if v is not None]
    if isinstance(value, ast.DictComp):
        return "dict", [value.value]
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in ("list", "tuple", "dict"):
        container = value.func.id
        if len(value.args) == 1 and isinstance(value.args[0], ast.GeneratorExp):
            return container, [value.args[0].elt]
        if len(value.args) == 1 and not value.keywords:
            inner = _elements(value.args[0])  # dict(dict(a=layer)), list([layer, ...])
            return (container, inner[1]) if inner is not None else None
        if container == "dict" and not value.args and value.keywords and all(k.arg for k in value.keywords):
            return container, [k.value for k in value.keywords]  # dict(wte=nn.Embedding(...), ...)
    return None


#: methods that register a module or parameter by hand (a plain list beside them is only an index)
_REGISTERS = frozenset({"self.add_module", "self.register_module", "self.register_parameter"})


def _new_value(element: ast.expr) -> bool:
    """An element made here, not `self.conv1` (a layer registered as its own attribute already)."""
    return not (isinstance(element, ast.Attribute) and _self_attribute(element) is not None)


@lint_check(MODULE_IN_PLAIN_CONTAINER, ast.Assign)
def module_in_plain_container(node: ast.Assign, ctx: Context) -> None:
    if not _is_module_class(ctx.class_info) or ctx.scope.cls is None or len(node.targets) != 1:
        return
    attribute = _self_attribute(node.targets[0])
    if attribute is None:
        return
    found = _elements(node.value, attribute)
    # every value the attribute is given: only a plain container throughout is one to append to
    values = ctx.memo.setdefault("TD122-values", {}).setdefault((id(ctx.class_info), attribute), set())
    values.add("plain" if found is not None else "other")
    if found is None:
        return
    container, elements = found
    registered = {_registered(ctx.kind(e)) for e in elements if _new_value(e)} - {None}
    if registered:
        pending = ctx.memo.setdefault(MODULE_IN_PLAIN_CONTAINER.code, [])
        pending.append((ctx.class_info, attribute, node, container, registered, ctx.scope))


@lint_check(MODULE_IN_PLAIN_CONTAINER, ast.Call, names={"append", "extend", "insert", "__setitem__"})
def module_added_to_plain_container(node: ast.Call, ctx: Context) -> None:
    func = node.func
    if not _is_module_class(ctx.class_info) or not isinstance(func, ast.Attribute):
        return
    attribute = _self_attribute(func.value)
    if attribute is None or not node.args or not _new_value(node.args[-1]):
        return
    added = node.args[-1]
    registered = {_registered(ctx.kind(added))} - {None}
    if registered:
        ctx.memo.setdefault(MODULE_IN_PLAIN_CONTAINER.code, []).append((ctx.class_info, attribute, node, "list", registered, ctx.scope))


@lint_check(MODULE_IN_PLAIN_CONTAINER, ast.Call, names={"setattr"})
def registered_by_setattr(node: ast.Call, ctx: Context) -> None:
    """`setattr(self, name, layer)` registers the layer: remember the method that does it."""
    if node.args and isinstance(node.args[0], ast.Name) and node.args[0].id == "self":
        ctx.memo.setdefault("TD122-setattr", set()).add(id(ctx.scope))


@lint_check(MODULE_IN_PLAIN_CONTAINER, FILE_END)
def report_plain_containers(tree: ast.Module, ctx: Context) -> None:
    seen: set[tuple[int, str]] = set()
    optimized = ctx.memo.get("optimized-attributes", set())
    values = ctx.memo.get("TD122-values", {})
    by_hand = ctx.memo.get("TD122-setattr", set())
    for info, attribute, node, container, registered, scope in ctx.memo.get(MODULE_IN_PLAIN_CONTAINER.code, []):
        if _registered(info.attributes.get(attribute)) is not None or (id(info), attribute) in seen:
            continue  # wrapped in nn.ModuleList/ModuleDict later, or reported already
        if values.get((id(info), attribute)) != {"plain"}:
            continue  # not (always) a plain list or dict: an nn.ModuleList made elsewhere, a base class's, ...
        if id(scope) in by_hand or any(e.receiver in _REGISTERS for e in scope.events):
            continue  # `self.add_module(name, layer)` beside it: the list is only an index
        seen.add((id(info), attribute))
        parameters_only = registered == {"parameter"}
        what = "nn.Parameter objects" if parameters_only else "submodules"
        fix = _wrap_fix(node, container, registered, ctx)
        if (id(info), attribute) in optimized:
            # trained by optimizers of their own: what is lost is the rest of registration
            ctx.report(MODULE_IN_PLAIN_CONTAINER, node, severity=Severity.WARNING, fix=fix, variant="own-optimizers",
                       fields={"what": what, "container": container, "attribute": attribute})
            continue
        # a plain list of parameters is also how TorchScript code indexes them by a variable
        # (an nn.ParameterList cannot be), filled from the checkpoint by hand: a warning only
        ctx.report(MODULE_IN_PLAIN_CONTAINER, node,
                   fields={"what": what, "container": container, "attribute": attribute},
                   severity=Severity.WARNING if parameters_only else None, fix=fix)


def _wrap_fix(node: ast.AST, container: str, registered: set[str], ctx: Context) -> Fix | None:
    if not isinstance(node, ast.Assign) or len(registered) != 1:
        return None
    nn = _nn_alias(ctx)
    if nn is None:
        return None
    value = node.value
    kind = "Parameter" if registered == {"parameter"} else "Module"
    if isinstance(value, (ast.List, ast.ListComp, ast.Tuple)):
        wrapper = f"{nn}.{kind}List"
        text = ctx.text(value)
        content = f"{wrapper}({text})" if not isinstance(value, ast.Tuple) else f"{wrapper}([{text.strip('()')}])"
    elif isinstance(value, (ast.Dict, ast.DictComp)):
        if isinstance(value, ast.Dict) and not all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in value.keys):
            return None
        content = f"{nn}.{kind}Dict({ctx.text(value)})"
    elif isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in ("list", "dict"):
        content = f"{nn}.{kind}{value.func.id.title()}({ctx.text(value)})"  # nn.ModuleDict(dict(a=layer))
    else:
        return None
    return Fix(title=f"Wrap in `{content.split('(')[0]}`", edits=(ctx.edit(value, content),), safe=False)


def _nn_alias(ctx: Context) -> str | None:
    for local, qualified in ctx.imports.names.items():
        if qualified == "torch.nn":
            return local
    for local, qualified in ctx.imports.names.items():
        if qualified == "torch":
            return f"{local}.nn"
    return None


_FACTORIES_PREFIX = "torch."


@lint_check(TENSOR_ATTRIBUTE_NOT_PARAMETER, ast.Assign)
def tensor_attribute_not_parameter(node: ast.Assign, ctx: Context) -> None:
    if not _is_module_class(ctx.class_info) or ctx.scope.cls is None or len(node.targets) != 1:
        return
    attribute = _self_attribute(node.targets[0])
    value = node.value
    if attribute is None or not isinstance(value, ast.Call):
        return
    trainable = False
    if isinstance(value.func, ast.Attribute) and value.func.attr == "requires_grad_":
        trainable = not value.args or literal(value.args[0]) is True
        value = value.func.value
    if not isinstance(value, ast.Call):
        return
    name = ctx.qualified(value.func) or ""
    if not name.startswith(_FACTORIES_PREFIX) or name.startswith("torch.nn."):
        return
    if name in _WRAPPERS and value.args and not isinstance(value.args[0], ast.Call):
        return  # `Variable(self.input_ref, requires_grad=True)`: an input that needs its gradient, not a weight
    if not trainable and literal(keyword(value, "requires_grad")) is not True:
        return
    ctx.memo.setdefault(TENSOR_ATTRIBUTE_NOT_PARAMETER.code, []).append((ctx.class_info, attribute, node))


#: pre-0.4 wrappers of an existing tensor
_WRAPPERS = frozenset({"torch.autograd.Variable", "torch.autograd.variable.Variable"})


#: the optimizers of `torch.optim` (torch 2.13), by the name a call ends with
OPTIMIZER_CLASSES = frozenset({"ASGD", "Adadelta", "Adafactor", "Adagrad", "Adam", "AdamW", "Adamax", "LBFGS", "Muon",
                               "NAdam", "RAdam", "RMSprop", "Rprop", "SGD", "SparseAdam"})


@lint_check((MODULE_IN_PLAIN_CONTAINER, TENSOR_ATTRIBUTE_NOT_PARAMETER), ast.Call, names=OPTIMIZER_CLASSES)
def attribute_given_to_optimizer(node: ast.Call, ctx: Context) -> None:
    """`torch.optim.RMSprop([self.lambda_op])`, `SGD(self.heads[i].parameters())`: the class
    optimizes the tensor (or the listed modules) itself, so they are trained unregistered."""
    if ctx.class_info is None or not (ctx.qualified(node.func) or "").startswith("torch.optim."):
        return
    given = [*node.args[:1], *(k.value for k in node.keywords if k.arg == "params")]
    optimized = ctx.memo.setdefault("optimized-attributes", set())
    for value in given:
        for item in ast.walk(value):
            attribute = _self_attribute(item)  # type: ignore[arg-type]
            if attribute is not None:
                optimized.add((id(ctx.class_info), attribute))


@lint_check(TENSOR_ATTRIBUTE_NOT_PARAMETER, FILE_END)
def report_tensor_attributes(tree: ast.Module, ctx: Context) -> None:
    optimized = ctx.memo.get("optimized-attributes", set())
    for info, attribute, node in ctx.memo.get(TENSOR_ATTRIBUTE_NOT_PARAMETER.code, []):
        if (id(info), attribute) in optimized:
            continue
        if _registered(info.attributes.get(attribute)) is None and not _registered_by_name(info, attribute, ctx):
            nn = _nn_alias(ctx)
            fix = Fix(title="Wrap in `nn.Parameter`", edits=(ctx.edit(node.value, f"{nn}.Parameter({ctx.text(node.value)})"),),
                      safe=False) if nn else None
            ctx.report(TENSOR_ATTRIBUTE_NOT_PARAMETER, node, fields={"attribute": attribute}, fix=fix)


def _registered_by_name(info: ClassInfo, attribute: str, ctx: Context) -> bool:
    """`self.register_parameter("w", ...)` or `register_buffer("w", ...)` somewhere in the class."""
    for scope in ctx.scopes:
        if scope.cls is info:
            for event in scope.events:
                if event.name == "call" and event.receiver in ("self.register_parameter", "self.register_buffer"):
                    args = event.node.args  # type: ignore[union-attr]
                    if args and literal(args[0]) == attribute:
                        return True
    return False


@lint_check(MISSING_SUPER_INIT, FILE_END, tracks=("__init__",))
def missing_super_init(tree: ast.Module, ctx: Context) -> None:
    for scope in ctx.scopes:
        info = scope.cls
        if info is None or not info.is_module or scope.name != f"{info.name}.__init__":
            continue
        if any(e.name == "__init__" for e in scope.events):
            continue
        if _not_the_definition(scope, ctx):
            continue
        if any(isinstance(s, ast.Raise) for s in scope.node.body):  # type: ignore[attr-defined]
            continue
        if "forward" not in info.methods and not any(_registered(k) for k in info.attributes.values()):
            continue  # never called as a module and holds no layer: nothing fails
        ctx.report(MISSING_SUPER_INIT, scope.node, fields={"cls": info.name})


def _not_the_definition(scope: Scope, ctx: Context) -> bool:
    """An `@overload` stub (`@typing.overload def __init__(self, x: int) -> None: ...`) only
    declares a signature, and a `def` that a later one of the same class replaces never runs:
    neither is the `__init__` Python calls."""
    node = scope.node
    if any(terminal(d) == "overload" for d in getattr(node, "decorator_list", ())):
        return True
    return any(other is not scope and other.cls is scope.cls and other.name == scope.name
               and other.node.lineno > node.lineno for other in ctx.scopes)  # type: ignore[attr-defined]


@lint_check(LAYER_CREATED_IN_FORWARD, ast.Call)
def layer_created_in_forward(node: ast.Call, ctx: Context) -> None:
    if not ctx.in_forward:
        return
    name = ctx.qualified(node.func)
    if name is None or not name.startswith("torch.nn.") or name.rpartition(".")[2] not in LAYERS_WITH_WEIGHTS:
        return
    statement = ctx.statement
    if isinstance(statement, (ast.Assign, ast.AnnAssign)):
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        if any(_self_attribute(t) is not None or isinstance(t, ast.Subscript) for t in targets):
            return  # stored on the module (lazy initialisation): registered from then on
    if isinstance(ctx.parent, ast.Call) and dotted(ctx.parent.func) in ("self.add_module", "self.register_module", "setattr"):
        return
    ctx.report(LAYER_CREATED_IN_FORWARD, node, fields={"layer": name.rpartition(".")[2]})
