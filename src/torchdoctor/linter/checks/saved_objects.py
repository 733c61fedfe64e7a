"""TD174: `torch.load` of a checkpoint that the same file saves with objects the default
`weights_only=True` loader refuses (an argparse Namespace, a whole model, a NumPy value).

The saves and loads of one file are matched by the keys the load reads: two of the saved
dict's keys (`checkpoint["model"]`, `checkpoint["optimizer"]` of a saved `{"model": ...,
"optimizer": ..., "args": args}`), or all of its plain ones; a single generic key may belong
to another checkpoint (pretrained weights, a teacher). A whole object saved on its own is
matched by the name it is loaded back into. A file that allow-lists globals (`add_safe_globals`,
`safe_globals`) is left alone.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from torchdoctor.linter.api import FILE_END, Context, Scope, keyword, lint_check, literal
from torchdoctor.linter.names import spells
from torchdoctor.rules.api.load_of_saved_objects import RULE as LOAD_OF_SAVED_OBJECTS

#: torch.serialization's allow-lists (`add_safe_globals`, `safe_globals`): loads rebuild what they list
_SAFE_GLOBALS = re.compile("safe_globals")
#: helpers that save their first argument with torch.save (besides torch.save itself)
_SAVES = frozenset({"save", "save_on_master", "save_checkpoint", "save_model", "save_state"})
_PARSE = frozenset({"parse_args", "parse_known_args"})


@dataclass
class _Refused:
    """A value the weights-only unpickler refuses, in words, and what to save instead."""

    what: str
    instead: str
    #: for an argparse value known only by its name: the function it must be read as an object in
    needs_attribute_use: tuple[Scope, str] | None = None


@dataclass
class _Save:
    line: int
    keys: set[str] = field(default_factory=set)  # every key of a saved dict
    refused: dict[str, _Refused] = field(default_factory=dict)  # key -> value, for a saved dict
    whole: tuple[str, _Refused] | None = None  # (name, value) for an object saved on its own


@dataclass
class _Notes:
    dicts: dict[tuple[int, str], list[tuple[ast.expr | None, ast.expr]]] = field(default_factory=dict)
    namespaces: set[str] = field(default_factory=set)
    saves: list[_Save] = field(default_factory=list)
    loads: list[tuple[ast.Call, str | None]] = field(default_factory=list)
    keys: dict[int, set[str]] = field(default_factory=dict)


def _notes(ctx: Context) -> _Notes:
    notes = ctx.memo.get(LOAD_OF_SAVED_OBJECTS.code)
    if notes is None:
        notes = ctx.memo[LOAD_OF_SAVED_OBJECTS.code] = _Notes()
    return notes


def _namespace(value: ast.expr, ctx: Context) -> bool:
    """`parser.parse_args()`, `parser.parse_known_args()[0]`, `argparse.Namespace(...)`."""
    if isinstance(value, ast.Subscript):
        value = value.value
    if not isinstance(value, ast.Call):
        return False
    func = value.func
    return (isinstance(func, ast.Attribute) and func.attr in _PARSE) or ctx.qualified(func) == "argparse.Namespace"


@lint_check(LOAD_OF_SAVED_OBJECTS, ast.Assign)
def remember_values(node: ast.Assign, ctx: Context) -> None:
    """Dict displays kept in a variable (and the items added to them), argparse results."""
    saves = ctx.memo.get("TD174-file")
    if saves is None:
        saves = ctx.memo["TD174-file"] = "save" in ctx.source.text and "load" in ctx.source.text
    if not saves or len(node.targets) != 1:
        return
    target, value = node.targets[0], node.value
    if isinstance(target, ast.Name):
        if isinstance(value, ast.Dict):
            _notes(ctx).dicts[(id(ctx.scope), target.id)] = list(zip(value.keys, value.values))
        elif _namespace(value, ctx):
            _notes(ctx).namespaces.add(target.id)
    elif isinstance(target, ast.Tuple) and target.elts and isinstance(target.elts[0], ast.Name):
        if _namespace(value, ctx):
            _notes(ctx).namespaces.add(target.elts[0].id)  # args, unknown = parser.parse_known_args()
    elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) and LOAD_OF_SAVED_OBJECTS.code in ctx.memo:
        entries = _notes(ctx).dicts.get((id(ctx.scope), target.value.id))
        if entries is not None:
            entries.append((target.slice, value))  # checkpoint["args"] = args


def _refused(value: ast.expr, ctx: Context) -> _Refused | None:
    """What the weights-only unpickler would refuse in `value`, if the source shows it."""
    if isinstance(value, ast.Name):
        name = value.id
        if name in _notes(ctx).namespaces:
            return _Refused(f"`{name}` (an argparse.Namespace)", f"`vars({name})`")
        node = ctx.scope.node
        arguments = getattr(node, "args", None)
        if name == "args" and name in ctx.scope.params and not (arguments and arguments.vararg
                                                               and arguments.vararg.arg == name):
            return _Refused(f"`{name}` (the script's options object)", f"`vars({name})`", (ctx.scope, name))
    kind = ctx.kind(value)
    if kind is not None and kind.tag in ("model", "optimizer"):
        what = "model" if kind.tag == "model" else "optimizer"
        return _Refused(f"the {what} object `{ctx.text(value)}`", f"`{ctx.text(value)}.state_dict()`")
    if isinstance(value, ast.Call) and (ctx.qualified(value.func) or "").startswith("numpy."):
        return _Refused(f"a NumPy value (`{ctx.text(value)}`)", "`.item()` or `.tolist()` of it")
    if isinstance(value, ast.Call) and ctx.qualified(value.func) == "argparse.Namespace":
        return _Refused("an argparse.Namespace", "a dict")
    return None


@lint_check(LOAD_OF_SAVED_OBJECTS, ast.Call, names=_SAVES)
def saved(node: ast.Call, ctx: Context) -> None:
    func = node.func
    qualified = ctx.qualified(func)
    last = (qualified or "").rpartition(".")[2] or getattr(func, "attr", None) or getattr(func, "id", "")
    if last == "save" and qualified is not None and qualified != "torch.save":
        return  # numpy.save, torch_xla's save, ...: not this format or not sure
    if not node.args:
        return
    first = node.args[0]
    entries: list[tuple[ast.expr | None, ast.expr]] | None = None
    if isinstance(first, ast.Dict):
        entries = list(zip(first.keys, first.values))
    elif isinstance(first, ast.Name):
        entries = _notes(ctx).dicts.get((id(ctx.scope), first.id))
    save = _Save(node.lineno)
    if entries is not None:
        for key, value in entries:
            name = literal(key) if key is not None else None
            if not isinstance(name, str):
                continue
            save.keys.add(name)
            refused = _refused(value, ctx)
            if refused is not None:
                save.refused[name] = refused
    elif isinstance(first, ast.Name):
        refused = _refused(first, ctx)
        if refused is not None:
            save.whole = (first.id, refused)
    if save.refused or save.whole:
        _notes(ctx).saves.append(save)


@lint_check(LOAD_OF_SAVED_OBJECTS, ast.Call, names={"load"})
def loaded(node: ast.Call, ctx: Context) -> None:
    if ctx.qualified(node.func) != "torch.load":
        return
    if any(k.arg is None for k in node.keywords):
        return  # **kwargs may say weights_only=False
    weights_only = keyword(node, "weights_only")
    if weights_only is not None and literal(weights_only) is not True:
        return
    statement = ctx.statement
    target = None
    if isinstance(statement, ast.Assign) and statement.value is node and len(statement.targets) == 1:
        target = getattr(statement.targets[0], "id", None)
    _notes(ctx).loads.append((node, target))


@lint_check(LOAD_OF_SAVED_OBJECTS, ast.Subscript)
def key_read(node: ast.Subscript, ctx: Context) -> None:
    """`checkpoint["model"]` of what a torch.load returned."""
    if LOAD_OF_SAVED_OBJECTS.code not in ctx.memo or not isinstance(node.value, ast.Name) or not isinstance(node.slice, ast.Constant):
        return
    key = node.slice.value
    kind = ctx.kind(node.value)
    if isinstance(key, str) and kind is not None and kind.tag == "checkpoint" and kind.node is not None:
        _notes(ctx).keys.setdefault(id(kind.node), set()).add(key)


@lint_check(LOAD_OF_SAVED_OBJECTS, FILE_END)
def report_loads_of_saved_objects(tree: ast.Module, ctx: Context) -> None:
    notes: _Notes | None = ctx.memo.get(LOAD_OF_SAVED_OBJECTS.code)
    if notes is None or not notes.saves or not notes.loads or ("safe_globals" in ctx.source.text and spells(tree, _SAFE_GLOBALS)):
        return  # `torch.serialization.add_safe_globals(...)` / `safe_globals(...)` allow the objects
    for load, target in notes.loads:
        found = _matching_save(notes, load, target)
        if found is not None:
            save, refused = found
            ctx.report(LOAD_OF_SAVED_OBJECTS, load,
                       fields={"save_line": save.line, "what": refused.what, "instead": refused.instead})


def _matching_save(notes: _Notes, load: ast.Call, target: str | None) -> tuple[_Save, _Refused] | None:
    keys = notes.keys.get(id(load), set())
    for save in notes.saves:
        shared = keys & save.keys
        # two keys, or every plain one: it reads this save's format (one generic key, `["model"]`,
        # may be another checkpoint's: pretrained weights, a teacher)
        if shared and (len(shared) >= 2 or shared >= save.keys - save.refused.keys()):
            confirmed = [r for _, r in sorted(save.refused.items()) if _confirmed(r)]
            if confirmed:
                return save, confirmed[0]
        if save.whole is not None and target == save.whole[0] and _confirmed(save.whole[1]):
            return save, save.whole[1]
    return None


def _confirmed(refused: _Refused) -> bool:
    """An `args` known only by its name is an options object when the function reads its
    attributes (`args.output_dir`): a plain dict, which would load, has none."""
    if refused.needs_attribute_use is None:
        return True
    scope, name = refused.needs_attribute_use
    return any(isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == name
               and isinstance(n.ctx, ast.Load) for n in ast.walk(scope.node))
