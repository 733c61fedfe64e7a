"""What a file's own functions are given: the kinds their parameters take from the calls.

`def train(model, loader, optimizer): ...` called as `train(net, train_loader, opt)` after
`net = Net()`: inside `train`, `model` is that model; so is `self.model = model` in the
`__init__` of a `Trainer(net, ...)`. The walk records the kinds of the
arguments of every call of a function by name (`Context.arguments`); a parameter takes a kind
when every call of the file gives it one, all the same (a function called with a model here and
with something else there learns nothing). Only objects are passed on (models, optimizers,
loaders, losses, scalers, schedulers), not values such as a batch or a loss, whose meaning the
call site does not fix.
"""

from __future__ import annotations

from collections.abc import Mapping

from torchdoctor.linter.model import Kind
from torchdoctor.linter.state import WalkState

#: the kinds a parameter may take from its callers
PASSED_ON = frozenset({"model", "optimizer", "dataloader", "loss_fn", "scaler", "scheduler"})


def callables(ctx: WalkState) -> dict[str, tuple[str, ...]]:
    """The file's functions and classes by name, with the parameters a call fills: a
    function's, or a class's `__init__`'s after `self` (`Trainer(model, optimizer)`)."""
    found = {name: scope.params for name, scope in ctx.functions.items()}
    for name, info in ctx.classes.items():
        init = ctx.methods.get((id(info), "__init__"))
        if init is not None and name not in found:
            found[name] = init.params[1:]
    return found


def parameter_kinds(callables: Mapping[str, tuple[str, ...]],
                    arguments: Mapping[str, list[tuple[list[Kind | None], dict[str, Kind | None]]]]
                    ) -> dict[str, dict[str, Kind]]:
    """Function (or class) name -> parameter -> the kind all of its calls in the file agree on."""
    found: dict[str, dict[str, Kind]] = {}
    for name, params in callables.items():
        calls = arguments.get(name)
        if not calls:
            continue
        agreed: dict[str, Kind] = {}
        for index, param in enumerate(params):
            kinds = [_given(call, index, param) for call in calls]
            first = kinds[0]
            if first is None or first.tag not in PASSED_ON:
                continue
            if all(k is not None and (k.tag, k.detail) == (first.tag, first.detail) for k in kinds):
                agreed[param] = first
        if agreed:
            found[name] = agreed
    return found


def _given(call: tuple[list[Kind | None], dict[str, Kind | None]], index: int, param: str) -> Kind | None:
    positional, keywords = call
    if param in keywords:
        return keywords[param]
    return positional[index] if index < len(positional) else None
