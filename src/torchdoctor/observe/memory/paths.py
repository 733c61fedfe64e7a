"""How a tensor was reached from a name the user's code has: the steps of a path, in words.

`history[3]` (a local of `train()`), `model.attention.maps[0]`, the closure variable `feats` of
a hook registered on `model.fc`, `errors[2]`'s traceback: the frame of `normalise()`, its `x`.
A path is a tuple of `Step`s from a root (a local, a global, a model) to the tensor.
"""

from __future__ import annotations

from dataclasses import dataclass

#: step kinds
LOCAL, GLOBAL, MODEL, ATTR, ITEM, KEY, CLOSURE, HOOK, TRACEBACK, FRAME_LOCAL, DATASET = (
    "local", "global", "model", "attr", "item", "key", "closure", "hook", "traceback", "frame-local", "dataset",
)
#: steps that go into a collection: what holds a growing number of things
INTO_COLLECTION = (ITEM, KEY)


@dataclass(frozen=True)
class Step:
    """One step of a path. `where` is (file, first line, function) for locals and frames."""

    kind: str
    text: str
    where: tuple[str, int, str] | None = None


Path = tuple[Step, ...]


def render(path: Path) -> str:
    """The path as code a person would write: `history[3]`, `model.maps[0]`; from a closure
    variable on, as the function that has it writes it (`outputs[1]`)."""
    closure = next((i for i in range(len(path) - 1, -1, -1) if path[i].kind == CLOSURE), None)
    if closure is not None:
        return render((Step(LOCAL, path[closure].text), *path[closure + 1:]))
    out = ""
    for step in path:
        if step.kind in (LOCAL, GLOBAL, MODEL, DATASET):
            out = step.text
        elif step.kind == ATTR:
            out += f".{step.text}"
        elif step.kind in (ITEM, KEY):
            out += f"[{step.text}]"
        elif step.kind == HOOK:
            out += f" -> {step.text}"
        elif step.kind == TRACEBACK:
            out += ".__traceback__"
        elif step.kind == FRAME_LOCAL:
            function = step.where[2] if step.where else "?"
            out += f" -> frame of {function}(): `{step.text}`"
    return out


#: steps that name something (a variable, an attribute, a closure variable, a hook)
NAMING = (LOCAL, GLOBAL, MODEL, DATASET, ATTR, CLOSURE, HOOK, FRAME_LOCAL)


def label(path: Path) -> str:
    """`` `history` ``, or `` `outputs` (closure of hook()) ``: a name for tables and keys."""
    closure = next((step for step in reversed(path) if step.kind == CLOSURE), None)
    context = f" (closure of {closure.where[2]}())" if closure is not None and closure.where is not None else ""
    return f"`{render(path)}`{context}"


def holder_of(path: Path) -> Path:
    """The part of the path that names what holds the tensor: the collection entered right
    after the last name on the path (`history` for `history[3]`, `cache` for `cache[k][0]`,
    `model.maps` for `model.maps[5]`), or the whole path when no collection follows it
    (`hidden`). Through an exception's traceback, what holds the exception (`errors` for
    `errors[2].__traceback__ -> frame of f(): x`)."""
    traceback = next((i for i, step in enumerate(path) if step.kind == TRACEBACK), None)
    if traceback is not None:
        path = path[:traceback]
    named = max((i for i, step in enumerate(path) if step.kind in NAMING), default=-1)
    entered = next((i for i in range(named + 1, len(path)) if path[i].kind in INTO_COLLECTION), None)
    return path if entered is None else path[:entered]


def through_traceback(path: Path) -> bool:
    return any(step.kind == TRACEBACK for step in path)

