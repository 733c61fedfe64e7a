"""TD143 from the source: the DataLoader a training loop draws from keeps the dataset's order.

A loop trains when it reaches an optimizer step that no `if` inside the loop guards
(`if phase == "train": optimizer.step()` serves evaluation too, and is left alone); loaders over
held-out data (`flow.held_out_loader`) are never the training ones. The
loader is followed to its `DataLoader(...)` call through names, attributes, function parameters
and returns (`lint.flow`). The fixed order is deliberate, or harmless, when the file orders the
data itself (a random permutation, a split, a sort by length), when the dataset picks its samples
at random, when it is an `IterableDataset`, and when the loop carries a recurrent state from one
batch to the next; none of those is reported.
"""

from __future__ import annotations

import ast
import re

from torchdoctor.linter.api import (
    FILE_END,
    ClassInfo,
    Context,
    Kind,
    Scope,
    argument,
    dotted,
    lint_check,
    literal,
    terminal,
)
from torchdoctor.linter.flow import held_out_loader, loop_iterable
from torchdoctor.linter.index import tree_index
from torchdoctor.linter.names import spells
from torchdoctor.linter.steps import TRACKED, loop_events, reached, stepped_optimizer
from torchdoctor.rules.data.training_loader_without_shuffle import RULE as TRAINING_LOADER_WITHOUT_SHUFFLE

_DATALOADER = "torch.utils.data.DataLoader"
#: calls that put data in a random order by hand (the loader's fixed order is then a random one)
_REORDERS = frozenset({"randperm", "shuffle", "permutation", "random_split", "train_test_split"})
#: calls by which a dataset's `__getitem__` draws its sample at random
_DRAWS = frozenset({"randint", "randrange", "choice", "choices", "random", "rand", "randn", "integers", "sample",
                    "randperm", "multinomial"})
_ITERABLE = frozenset({"torch.utils.data.IterableDataset", "torch.utils.data.IterDataPipe"})
_STREAMED = re.compile(r"IterableDataset|IterDataPipe|streaming|webdataset|wds\.", re.I)
#: the same in the code's names (`wds.WebDataset`, `streaming=True`), not in its comments
_STREAMED_NAME = re.compile(r"IterableDataset|IterDataPipe|streaming|webdataset", re.I)
#: a word of a name or key that says length: `len`, `lengths`, `seq_len`, `seqLen`, `MAX_LEN`
#: (not the letters inside another word: `filename`)
_LENGTH = re.compile(r"(?:(?:^|_)(?:len|LEN)|(?:^|_|(?<=[a-z0-9]))Len)(?:gths?|GTHS?|s)?(?=$|_|[A-Z0-9])")


@lint_check(TRAINING_LOADER_WITHOUT_SHUFFLE, ast.For)
def loop_over_loader(node: ast.For, ctx: Context) -> None:
    """Remember which `DataLoader(...)` call each loop draws from (kinds are known only now)."""
    iterable = loop_iterable(node.iter, ctx)
    kind = ctx.kind(iterable) if iterable is not None else None
    first = kind.node if kind is not None and kind.tag == "dataloader" and isinstance(kind.node, ast.Call) else None
    parameter = iterable.id if isinstance(iterable, ast.Name) and iterable.id in ctx.scope.params else None
    if first is not None or parameter is not None:
        ctx.memo.setdefault(TRAINING_LOADER_WITHOUT_SHUFFLE.code, []).append((ctx.scope, node, first, parameter))


@lint_check(TRAINING_LOADER_WITHOUT_SHUFFLE, ast.Call, names={"DataLoader"})
def dataloader_dataset(node: ast.Call, ctx: Context) -> None:
    """What each DataLoader call loads, while the names of its scope are known."""
    dataset = argument(node, "dataset", 0)
    ctx.memo.setdefault("TD143-datasets", {})[id(node)] = ctx.kind(dataset) if dataset is not None else None


@lint_check(TRAINING_LOADER_WITHOUT_SHUFFLE, FILE_END, tracks=TRACKED)
def report_training_loader_without_shuffle(tree: ast.Module, ctx: Context) -> None:
    loops = ctx.memo.get(TRAINING_LOADER_WITHOUT_SHUFFLE.code, [])
    if not loops or _reorders_data(tree, ctx):
        return
    datasets: dict[int, Kind | None] = ctx.memo.get("TD143-datasets", {})
    reported: set[int] = set()
    for scope, loop, first, parameter in loops:
        if not _trains(scope, loop, ctx):
            continue
        carries: bool | None = None  # read only for a loader that would be reported: it walks the loop
        for call in _loaders(scope, first, parameter, ctx):
            if held_out_loader(call, Kind("dataloader", "", call), ctx):
                continue  # evaluation data, whatever the loop does with it
            how = _keeps_order(call, datasets.get(id(call)), tree, ctx) if id(call) not in reported else None
            if how is None:
                continue
            if carries is None:
                carries = _carries_state(loop)
            if carries:
                break
            reported.add(id(call))
            shuffle = argument(call, "shuffle", 2)
            ctx.report(TRAINING_LOADER_WITHOUT_SHUFFLE, shuffle if shuffle is not None else call,
                       fields={"loop": loop.lineno, "how": how, "dataset": _dataset_name(call, ctx)})


def _loaders(scope: Scope, first: ast.Call | None, parameter: str | None, ctx: Context) -> list[ast.Call]:
    """The `DataLoader(...)` calls a loop iterates: the one its name holds, or, for a function's
    parameter, each one the calls of the function give it (`train(model, loader_a)`, ...)."""
    calls = [first] if first is not None else []
    if parameter is not None and scope.name in ctx.functions:
        index = scope.params.index(parameter)
        for positional, keywords in ctx.arguments.get(scope.name, []):
            given = keywords.get(parameter) if parameter in keywords else positional[index] if index < len(positional) else None
            if given is not None and given.tag == "dataloader" and isinstance(given.node, ast.Call) \
                    and all(given.node is not c for c in calls):
                calls.append(given.node)
    return [c for c in calls if ctx.qualified(c.func) == _DATALOADER]


def _trains(scope: Scope, loop: ast.For, ctx: Context) -> bool:
    """The loop reaches an optimizer step that no `if` of the loop guards (a backward() alone
    computes gradients for something else: saliency, an attack on the input)."""
    for event, via in reached(loop_events(scope, loop), ctx):
        if not stepped_optimizer(event):
            continue
        guards = [c for c in via.conditions if _within(c, loop)] + ([] if event is via else list(event.conditions))
        if not guards:
            return True
    return False


def _within(node: ast.AST, outer: ast.AST) -> bool:
    return outer.lineno <= node.lineno <= (outer.end_lineno or outer.lineno)  # type: ignore[attr-defined]


def _keeps_order(call: ast.Call, dataset: Kind | None, tree: ast.Module, ctx: Context) -> str | None:
    """How the DataLoader keeps its dataset's order (`shuffle=False`, or no shuffle at all), or
    None when it shuffles, may shuffle, or the order is the dataset's business."""
    if argument(call, "sampler", 3) is not None or argument(call, "batch_sampler", 4) is not None:
        return None
    if any(k.arg is None for k in call.keywords) and not _plain_kwargs(call, tree):
        return None  # `**kwargs` may hold a sampler
    batch_size = argument(call, "batch_size", 1)
    if batch_size is not None and literal(batch_size) is None:
        return None  # the dataset makes the batches
    if _iterable(dataset, ctx) or _draws_at_random(dataset, ctx):
        return None
    shuffle = argument(call, "shuffle", 2)
    if shuffle is not None:
        return "`shuffle=False`" if literal(shuffle) is False else None
    return "no `shuffle=True`, no sampler" if _map_style(dataset, ctx) else None


def _plain_kwargs(call: ast.Call, tree: ast.Module) -> bool:
    """Every `**name` of the call is a name the file only ever binds to dict displays without a
    sampler (`kwargs = {"num_workers": 1} if cuda else {}`), and never changes afterwards
    (`kwargs.update(...)`, `kwargs["shuffle"] = True`)."""
    for keyword in call.keywords:
        if keyword.arg is not None:
            continue
        name = dotted(keyword.value)
        if name is None:
            return False
        values = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and any(dotted(t) == name for t in node.targets):
                values.append(node.value)
            elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store) and dotted(node.value) == name \
                    or isinstance(node, ast.Attribute) and dotted(node.value) == name \
                    or isinstance(node, ast.AugAssign) and dotted(node.target) == name:
                return False
        if not values or not all(_dict_without_sampler(v) for v in values):
            return False
    return True


def _dict_without_sampler(value: ast.expr) -> bool:
    if isinstance(value, ast.IfExp):
        return _dict_without_sampler(value.body) and _dict_without_sampler(value.orelse)
    return isinstance(value, ast.Dict) and all(
        isinstance(k, ast.Constant) and k.value not in ("sampler", "batch_sampler", "shuffle") for k in value.keys)


def _dataset_info(dataset: Kind | None, ctx: Context) -> ClassInfo | None:
    """The file's class of a dataset, when the file defines it."""
    return ctx.classes.get(dataset.detail) if dataset is not None and dataset.tag == "dataset" else None


def _iterable(dataset: Kind | None, ctx: Context) -> bool:
    """An `IterableDataset` of the file; or a dataset made elsewhere in a file whose code names
    iterable or streamed datasets (the loader could not shuffle it; its comments do not count)."""
    if dataset is None or dataset.tag != "dataset":
        streamed = ctx.memo.get("TD143-streamed")
        if streamed is None:
            streamed = ctx.memo["TD143-streamed"] = (_STREAMED.search(ctx.source.text) is not None
                                                     and spells(ctx.module_scope.node, _STREAMED_NAME))
        return streamed
    info = _dataset_info(dataset, ctx)
    return info is not None and any(base in _ITERABLE or base.endswith("IterableDataset") for base in info.bases)


def _draws_at_random(dataset: Kind | None, ctx: Context) -> bool:
    """The dataset's `__getitem__` picks its sample at random (the index barely matters)."""
    info = _dataset_info(dataset, ctx)
    cls = info.node if info is not None else None
    getitem = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__getitem__"), None) if cls else None
    return getitem is not None and any(isinstance(n, ast.Call) and terminal(n.func) in _DRAWS for n in ast.walk(getitem))


def _map_style(dataset: Kind | None, ctx: Context) -> bool:
    """A dataset known to be indexable: a torchvision dataset or a map-style Dataset of the file."""
    if dataset is None or dataset.tag != "dataset":
        return False
    return dataset.detail in ctx.classes or isinstance(dataset.node, ast.Call) and (
        ctx.qualified(dataset.node.func) or "").startswith("torchvision.datasets.")


def _reorders_data(tree: ast.Module, ctx: Context) -> bool:
    """The file puts samples in a random order itself, or sorts them by length on purpose (the
    calls are looked for only when the text names one of them)."""
    text = ctx.source.text
    if "sort" not in text and not any(name in text for name in _REORDERS):
        return False
    calls = ctx.calls if ctx.walked_whole_file else tree_index(tree, ctx).of(ast.Call)
    for node in calls:  # any one will do: the walk's calls serve, in its order
        name = terminal(node.func)
        if name in _REORDERS:
            return True
        if name in ("sorted", "sort") and any(k.arg == "key" and _by_length(k.value) for k in node.keywords):
            return True
    return False


def _by_length(key: ast.expr) -> bool:
    """A sort key that reads a length: `len(...)`, `s.seq_len`, `s["length"]` (a word of a
    name or a key, not a substring of one: `s["filename"]` is no length)."""
    return any(isinstance(n, ast.Constant) and isinstance(n.value, str) and _LENGTH.search(n.value)
               for n in ast.walk(key)) or spells(key, _LENGTH)


def _carries_state(loop: ast.For) -> bool:
    """A name that a call in the loop reads before the loop's body rebinds it from that call
    (`output, hidden = model(x, hidden)`): a recurrent state carried across batches."""
    targets = {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)}
    assigned: set[str] = set(targets)
    for statement in (n for s in loop.body for n in ast.walk(s)):
        if not isinstance(statement, ast.Assign) or not isinstance(statement.value, ast.Call):
            continue
        stored = {n.id for t in statement.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        read = {a.id for a in ast.walk(statement.value) if isinstance(a, ast.Name)}
        if (stored & read) - assigned:
            return True
        assigned |= stored
    return False


def _dataset_name(call: ast.Call, ctx: Context) -> str:
    dataset = argument(call, "dataset", 0)
    return f"`{ctx.text(dataset)}`" if dataset is not None and len(ctx.text(dataset)) <= 40 else "the dataset"
