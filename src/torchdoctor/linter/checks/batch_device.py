"""TD410 from the source: in a loop over a DataLoader, some batch tensors are moved to the device
(`x.to(device)`, `.cuda()`), the model was moved too, and another tensor of the same batch reaches
the model (as its first argument) or the loss without ever being moved. On a GPU the call fails
with "Expected all tensors to be on the same device"; on a CPU-only machine nothing shows.

The walk keeps, per DataLoader loop, which names hold a batch tensor and whether each was moved;
the model's move is looked for at the end of the file (it is often in `main()`, after `train()`).
A loop whose batch has a single tensor has no sibling to compare with: there the evidence is
another input of the same model that the file moves (the batch of its evaluation loop, a
`torch.randn(...).to(device)` sample), unless the data may already sit on the device (a dataset
built from moved tensors, or one that moves its items itself).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from torchdoctor.linter.api import FILE_END, Context, Event, lint_check, may_pass
from torchdoctor.linter.flow import LOSS_FUNCTIONS, iterated
from torchdoctor.linter.names import dotted
from torchdoctor.rules.device.device_mismatch import RULE as DEVICE_MISMATCH

#: methods that keep a tensor where it is (a reshape of a CPU tensor is on the CPU)
_KEEP_DEVICE = frozenset({
    "view", "reshape", "squeeze", "unsqueeze", "flatten", "permute", "transpose", "contiguous", "float", "double",
    "half", "long", "int", "bool", "clone", "view_as", "reshape_as", "expand", "requires_grad_",
})
_MOVES = frozenset({"to", "cuda"})
_KEEPS_OR_MOVES = _KEEP_DEVICE | _MOVES
_DEVICE_NAME = re.compile(r"device|dev$|gpu|cuda|rank", re.I)
_CPU_ONLY = frozenset({"torch.nn.utils.rnn.pack_padded_sequence", "torch.nn.functional.ctc_loss"})


@dataclass
class _Batch:
    """One DataLoader loop: its batch tensors (name -> the statement that bound them unmoved, or
    None once moved or rebound to something else), whether any was moved, the unmoved uses."""

    names: dict[str, ast.stmt | None] = field(default_factory=dict)
    moved: bool = False
    model_outputs: dict[str, str] = field(default_factory=dict)  # name -> the callee that made it
    uses: list[tuple[str, str, ast.AST]] = field(default_factory=list)  # (unmoved name, the model, the call)
    kept_on_cpu: set[str] = field(default_factory=set)
    scope: int = 0  # id of the function the loop is in


def _is_move(call: ast.Call, ctx: Context) -> bool:
    """`.cuda()`, `.to(device)`, `.to(self.gpu_id)`: not `.to(torch.float32)` nor `.to("cpu")`."""
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr not in _MOVES:
        return False
    if func.attr == "cuda":
        return True
    target = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "device"), None)
    if target is None:
        return False
    if isinstance(target, ast.Constant):
        return isinstance(target.value, (str, int)) and target.value != "cpu"
    if isinstance(target, ast.Call):
        return ctx.qualified(target.func) == "torch.device"
    if isinstance(target, ast.Attribute) and target.attr == "device":
        return True  # `.to(next(self.parameters()).device)`, `.to(self.fc.weight.device)`
    # a variable may hold a dtype (`.to(weight_dtype)`): only names that say they are a device
    return bool(_DEVICE_NAME.search((dotted(target) or "").rpartition(".")[2]))


def _root(value: ast.expr, ctx: Context) -> tuple[str, bool] | None:
    """(the batch name a value is made from, whether it was moved on the way): `x.view(-1).to(d)`."""
    moved = False
    while True:
        if isinstance(value, ast.Name):
            return value.id, moved
        if isinstance(value, ast.Subscript):
            value = value.value
        elif (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
              and ctx.qualified(value.func) is None and value.func.attr in _KEEPS_OR_MOVES):
            moved = moved or _is_move(value, ctx)  # `.to(torch.long)` keeps the device
            value = value.func.value
        else:
            return None


def _state(ctx: Context) -> _Batch | None:
    loops = ctx.memo.get("TD410-loops", {})
    for loop in reversed(ctx.loops):
        if id(loop) in loops:
            return loops[id(loop)][1]
    return None


@lint_check(DEVICE_MISMATCH, ast.For, tracks=("to", "cuda", "prepare"))
def dataloader_loop(node: ast.For, ctx: Context) -> None:
    if iterated(node.iter, ctx)[0] != "dataloader":
        return
    target = node.target
    if (isinstance(node.iter, ast.Call) and isinstance(node.iter.func, ast.Name) and node.iter.func.id == "enumerate"
            and isinstance(target, ast.Tuple) and len(target.elts) == 2):
        target = target.elts[1]
    state = _Batch(scope=id(ctx.scope))
    for name in ast.walk(target):
        if isinstance(name, ast.Name):
            state.names[name.id] = node
    ctx.memo.setdefault("TD410-loops", {})[id(node)] = (iterated(node.iter, ctx)[1], state)


@lint_check(DEVICE_MISMATCH, ast.Assign)
def batch_rebound(node: ast.Assign, ctx: Context) -> None:
    state = _state(ctx) if ctx.loops else None
    if state is None or len(node.targets) != 1:
        return
    target, value = node.targets[0], node.value
    pairs: list[tuple[ast.expr, ast.expr]]
    if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) and len(target.elts) == len(value.elts):
        pairs = list(zip(target.elts, value.elts))
    elif isinstance(target, (ast.Tuple, ast.List)):
        pairs = [(element, value) for element in target.elts]  # x, y = batch
    else:
        pairs = [(target, value)]
    bound: dict[str, ast.expr] = {}
    for element, item in pairs:
        if isinstance(element, ast.Name):
            bound[element.id] = item
        elif isinstance(element, ast.Subscript) and (root := _root(element, ctx)) is not None:
            state.names.pop(root[0], None)  # images[0] = images[0].cuda(): its items change, not followed
    if isinstance(value, ast.Call):
        callee = dotted(value.func)
        if callee and isinstance(target, ast.Name) and value.args and _root(value.args[0], ctx) is not None:
            state.model_outputs[target.id] = callee  # out = model(x)
    for name, item in bound.items():
        root = _root(item, ctx)
        if root is None or root[0] not in state.names:
            state.names.pop(name, None)
            continue
        if root[1]:
            state.moved = True
            state.names[name] = None
        else:
            state.names[name] = node if state.names[root[0]] is not None else None


@lint_check(DEVICE_MISMATCH, ast.Call)
def batch_used(node: ast.Call, ctx: Context) -> None:
    state = _state(ctx) if ctx.loops else None
    if state is None:
        return
    qualified = ctx.qualified(node.func)
    args = [a for a in node.args if not isinstance(a, ast.Starred)]
    if qualified in _CPU_ONLY:
        state.kept_on_cpu.update(r[0] for a in args if (r := _root(a, ctx)) is not None)
        return
    if _is_move(node, ctx) and (r := _root(node, ctx)) is not None and r[0] in state.names:
        state.moved = True
        return
    if _is_loss(node, qualified, ctx) and len(args) >= 2:
        outputs = [o for a in args[:2] if (o := _model_output(a, state, ctx)) is not None]
        for arg in args[:2]:
            unmoved = _unmoved(arg, state, ctx)
            if unmoved is not None and outputs:
                state.uses.append((unmoved, outputs[0], node))
        return
    callee = dotted(node.func)
    if qualified is None and callee and args and (unmoved := _unmoved(args[0], state, ctx)) is not None:
        state.uses.append((unmoved, callee, node))


def _is_loss(call: ast.Call, qualified: str | None, ctx: Context) -> bool:
    """A loss module (`nn.CrossEntropyLoss()`, or a parameter named `criterion`/`loss_fn`) or
    function (`F.nll_loss`); not CTC, whose lengths may stay on the CPU."""
    if qualified is not None:
        last = qualified.rpartition(".")[2]
        return qualified.startswith("torch.nn.functional.") and last in LOSS_FUNCTIONS and last != "ctc_loss"
    kind = ctx.kind(call.func)
    if kind is not None:
        return kind.tag == "loss_fn" and kind.detail != "CTCLoss"
    name = (dotted(call.func) or "").rpartition(".")[2].lower()
    return "criterion" in name or name in ("loss_fn", "loss_func", "lossfn", "loss_function")


def _model_output(arg: ast.expr, state: _Batch, ctx: Context) -> str | None:
    """The callee that made `arg` from a batch tensor: `out` of `out = model(x)`, or `model(x)` itself."""
    if isinstance(arg, ast.Name):
        return state.model_outputs.get(arg.id)
    if isinstance(arg, ast.Call) and arg.args and _root(arg.args[0], ctx) is not None:
        return dotted(arg.func)
    return None


def _unmoved(arg: ast.expr, state: _Batch, ctx: Context) -> str | None:
    root = _root(arg, ctx)
    if root is None or root[1] or state.names.get(root[0]) is None:
        return None
    return root[0]


@lint_check(DEVICE_MISMATCH, ast.Call)
def moved_input(node: ast.Call, ctx: Context) -> None:
    """`model(x.to(device))`, or `model.decode(z)` after `z = torch.randn(...).to(device)` in the
    same function: the names of a model the file feeds moved tensors (`model`, `decode`)."""
    if not node.args:
        return
    callee = dotted(node.func)
    if callee is None or ctx.qualified(node.func) is not None:
        return
    first = node.args[0]
    moved = _root(first, ctx)
    if (moved is not None and moved[1]) or (
            isinstance(first, ast.Name) and (id(ctx.scope), first.id) in ctx.memo.get("TD410-moved-locals", set())):
        fed = ctx.memo.setdefault("TD410-fed-moved", {})
        for name in callee.split("."):
            fed.setdefault(name, node.lineno)


@lint_check(DEVICE_MISMATCH, FILE_END)
def report_unmoved_batches(tree: ast.Module, ctx: Context) -> None:
    moves = [e for scope in ctx.scopes for e in scope.events if e.name in _MOVES and isinstance(e.node, ast.Call)
             and _is_move(e.node, ctx)]
    if any(_forward_moves_input(e) for e in moves):
        return  # a model that moves its own input
    prepared = {dotted(a) for scope in ctx.scopes for e in scope.events if e.name == "prepare"
                and isinstance(e.node, ast.Call) for a in e.node.args}
    fed_moved: dict[str, int] = ctx.memo.get("TD410-fed-moved", {})
    wrappers: set[tuple[int, str]] = ctx.memo.get("TD410-input-movers", set())
    data_on_device: bool | None = None  # looked for only when a batch of one needs the evidence
    for loop, state in ctx.memo.get("TD410-loops", {}).values():
        if loop in prepared:
            continue  # `accelerator.prepare` moves it
        if not state.moved:
            if not any(callee.rpartition(".")[2] in fed_moved for _, callee, _ in state.uses):
                continue  # nothing says the batch must move (a CPU-only program)
            if data_on_device is None:
                data_on_device = _data_may_be_on_device(tree, moves, ctx)
            if data_on_device:
                continue
        reported: set[str] = set()
        for name, callee, where in state.uses:
            if name in reported or name in state.kept_on_cpu or not _model_moved(callee, moves, ctx):
                continue
            if _wrapper_key(callee, state.scope) in wrappers and isinstance(where, ast.Call) and dotted(where.func) == callee:
                continue  # given to a DataParallel / DDP model: it scatters its inputs to its devices
            if state.moved:
                others = f"the other batch tensors and `{callee}` are"
            elif (line := fed_moved.get(callee.rpartition(".")[2])) is not None:
                others = f"`{callee}` is, and so is what it is given at line {line}"
            else:
                continue
            reported.add(name)
            bound = state.names.get(name)
            at = bound if isinstance(bound, ast.Assign) else where  # where it was last prepared, else the use
            ctx.report(DEVICE_MISMATCH, at, variant="unmoved-batch",
                       fields={"name": name, "others": others, "use": ctx.text(where)[:60]})


def _model_moved(callee: str, moves: list[Event], ctx: Context) -> bool:
    """The model called in the loop was moved somewhere in the file: a move of something with the
    same last name (`model.to(device)`, `self.model = model.to(gpu_id)`), or `model = Net().to(device)`."""
    last = callee.rpartition(".")[2]
    moved_names = ctx.memo.get("TD410-moved-targets", set())
    return last in moved_names or any(e.receiver is not None and e.receiver.rpartition(".")[2] == last for e in moves)


@lint_check(DEVICE_MISMATCH, ast.Assign)
def model_moved_by_assignment(node: ast.Assign, ctx: Context) -> None:
    """`model = Net().to(device)`, `self.model = model.cuda()`: the names a moved value is given
    (and, for plain names, the function they are local to)."""
    if isinstance(node.value, ast.Call) and _is_move(node.value, ctx):
        for target in node.targets:
            name = dotted(target)
            if name is not None:
                ctx.memo.setdefault("TD410-moved-targets", set()).add(name.rpartition(".")[2])
            if isinstance(target, ast.Name):
                ctx.memo.setdefault("TD410-moved-locals", set()).add((id(ctx.scope), target.id))


#: wrappers whose forward moves the inputs to their device (`device_ids[0]`) before the module sees them
_MOVING_WRAPPERS = frozenset({"torch.nn.DataParallel", "torch.nn.parallel.DataParallel",
                              "torch.nn.parallel.data_parallel.DataParallel"})
_DDP = frozenset({"torch.nn.parallel.DistributedDataParallel",
                  "torch.nn.parallel.distributed.DistributedDataParallel"})


@lint_check(DEVICE_MISMATCH, ast.Assign)
def model_wrapped(node: ast.Assign, ctx: Context) -> None:
    """`model = nn.DataParallel(net).cuda()`, `model = DDP(model, device_ids=[rank])`: the names of
    models that move what they are given to their device themselves (DDP only with `device_ids`).
    Not under an `if` (`if ngpu > 1: netG = nn.DataParallel(netG)`): the plain model is used otherwise."""
    if ctx.conditions:
        return
    value: ast.expr = node.value
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in _MOVES:
        value = value.func.value
    if not isinstance(value, ast.Call):
        return
    qualified = ctx.qualified(value.func)
    if qualified in _MOVING_WRAPPERS or (qualified in _DDP and may_pass(value, "device_ids", 1)):
        for target in node.targets:
            name = dotted(target)
            if name is not None:
                ctx.memo.setdefault("TD410-input-movers", set()).add(_wrapper_key(name, id(ctx.scope)))


def _wrapper_key(name: str, scope: int) -> tuple[int, str]:
    """A local name counts in its own function, an attribute (`self.model`) in the whole file."""
    return (scope, name) if "." not in name else (0, name.rpartition(".")[2])


#: where a dataset's items are made or batched: a move there sends batches out already moved
_DATA_METHODS = ("__getitem__", "__getitems__", "__iter__", "__next__")


def _data_may_be_on_device(tree: ast.Module, moves: list[Event], ctx: Context) -> bool:
    """The loaders may yield tensors already on the device: a move inside a dataset's item method
    or a collate function, or a dataset / loader built from a moved tensor (`TensorDataset(x.cuda())`)."""
    for event in moves:
        function = event.scope.name.rpartition(".")[2] if event.scope is not None else ""
        if function in _DATA_METHODS or "collate" in function.lower():
            return True
    moved_names = ctx.memo.get("TD410-moved-targets", set())
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and (dotted(node.func) or "").rpartition(".")[2] in ("TensorDataset", "DataLoader"):
            for argument in node.args:
                root = _root(argument, ctx)
                if root is not None and (root[1] or root[0] in moved_names):
                    return True
    return False


def _forward_moves_input(event: Event) -> bool:
    """A model's `forward` (or a wrapper's `__call__`) moves what it is given: `x.to(self.device)`,
    `inputs["image"].to(...)`, `batch.x.cuda()`, for any of its parameters."""
    scope = event.scope
    if scope is None or not scope.name.endswith((".forward", ".__call__")) or len(scope.params) < 2:
        return False
    call = event.node
    receiver = call.func.value if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) else None
    while isinstance(receiver, (ast.Subscript, ast.Attribute)):
        receiver = receiver.value
    return isinstance(receiver, ast.Name) and receiver.id in scope.params[1:]
