"""`TARGET` -> the factory -> the objects to check, with a clear one-line error for each way
this can go wrong (exit status 2): no such file or module, an import that fails, no such
factory, a factory that raises or returns the wrong shape of thing.

The factory runs with a `SiteRecorder` active, so findings can point at the lines that
created the model's layers, the optimizer, the DataLoader and the tensors.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import inspect
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NoReturn

import torch
from torch import nn
from torch.utils.data import DataLoader

from torchdoctor.core.errors import UsageError
from torchdoctor.core.locate import display_path, innermost_user_frame, traceback_frames
from torchdoctor.core.wording import article
from torchdoctor.health import preimport
from torchdoctor.introspect.sites import Locator, SiteRecorder
from torchdoctor.linter.source import Unreadable, read_source

#: the keys of the factory's dict that the check reads
KEYS = ("model", "data", "loss_fn", "optimizer")
DEFAULT_FACTORY = "make"


def split_target(target: str) -> tuple[str, str]:
    """("path/to/file.py" or "package.module", factory name)."""
    spec, sep, name = target.rpartition(":")
    if not sep or not spec or os.sep in name or "/" in name or name.endswith(".py"):
        return target, DEFAULT_FACTORY
    return spec, name


def load_factory(target: str) -> tuple[Callable[[], Any], str]:
    """The factory function and a label for messages ("lab.py:make")."""
    spec, name = split_target(target)
    is_file = spec.endswith(".py") or os.sep in spec or "/" in spec
    module = _import_file(Path(spec), name) if is_file else _import_module(spec, name)
    label = f"{spec}:{name}"
    factory = getattr(module, name, None)
    if factory is None:
        _no_factory(spec, name, sorted(n for n, v in vars(module).items() if inspect.isfunction(v) and v.__module__ == module.__name__))
    if not callable(factory):
        raise UsageError(f"{label} is {article(type(factory).__name__)}, not a function: the factory must be callable")
    try:
        inspect.signature(factory).bind()
    except TypeError:
        raise UsageError(f"{label} takes arguments, but the factory is called with none: give its parameters defaults") from None
    except ValueError:  # builtins without a signature
        pass
    return factory, label


def _no_factory(spec: str, name: str, defined: list[str]) -> NoReturn:
    hint = f"; it defines {', '.join(defined)}" if defined else ""
    default = f" (a TARGET without :FUNCTION names {DEFAULT_FACTORY!r})" if name == DEFAULT_FACTORY else ""
    raise UsageError(f"{spec} has no function {name!r}{default}{hint}: name the factory as {spec}:FUNCTION")


def _before_import(spec: str, text: str, name: str) -> None:
    """Refuse, from the source alone, a file that does not define the factory or that would train
    when imported (health/preimport.py): importing it would run the script for nothing."""
    source = preimport.parse(text)
    if source is None:
        return  # the import says what is wrong with it, at its line
    if not source.binds(name):
        _no_factory(spec, name, source.functions())
    training = source.training_on_import()
    if training is not None:
        raise UsageError(
            f"{spec} trains when imported: {training}, at the module level; put the training under "
            f"`if __name__ == \"__main__\":` so that `check` can import {spec}:{name} without running it (it was not imported)"
        )


def _import_file(path: Path, factory: str) -> Any:
    if not path.exists():
        raise UsageError(f"{path} does not exist: TARGET is path/to/file.py:factory or package.module:factory")
    if not path.is_file():
        raise UsageError(f"{path} is not a file: TARGET is path/to/file.py:factory")
    folder = str(path.resolve().parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)  # as `python path/to/file.py` does, for its sibling imports
    name = path.stem if path.stem.isidentifier() or path.stem not in sys.modules else f"torchdoctor_target_{path.stem}"
    if name in sys.modules and getattr(sys.modules[name], "__file__", None) != str(path.resolve()):
        name = f"torchdoctor_target_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(name, path.resolve())
    if spec is None or spec.loader is None:
        raise UsageError(f"cannot import {path}: not a Python module")
    try:
        text = read_source(path)  # a file Python cannot decode is said in words, with its line
    except Unreadable as problem:
        raise UsageError(f"cannot import {path}: {problem.reason}") from None
    _before_import(str(path), text, factory)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        del sys.modules[name]
        where = display_path(exc.filename or str(path)) + (f":{exc.lineno}" if exc.lineno else "")
        raise UsageError(f"cannot import {path}: SyntaxError: {exc.msg} at {where}") from None
    except (Exception, SystemExit) as exc:
        del sys.modules[name]
        raise UsageError(f"importing {path} raised {describe_exception(exc)}; fix it so that `python {path}` runs") from None
    return module


def _import_module(name: str, factory: str) -> Any:
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        found = importlib.util.find_spec(name)  # imports the parent packages, not the module
        origin = Path(found.origin) if found is not None and found.origin and found.origin.endswith(".py") else None
        text = read_source(origin) if origin is not None else None
    except (Exception, SystemExit):
        text = None  # the import below says what is wrong
    if text is not None:
        _before_import(name, text, factory)
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and name.startswith(exc.name):
            raise UsageError(f"no module named {name!r}: TARGET is path/to/file.py:factory or package.module:factory") from None
        raise UsageError(f"importing {name} raised {describe_exception(exc)}") from None
    except (Exception, SystemExit) as exc:
        raise UsageError(f"importing {name} raised {describe_exception(exc)}") from None


def describe_exception(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    found = innermost_user_frame(traceback_frames(exc.__traceback__))
    where = f" at {display_path(found[0])}:{found[1]}" if found else ""
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ") + where


def call_factory(factory: Callable[[], Any], label: str) -> tuple[Any, Locator]:
    """Call the factory with creation sites recorded; its result and a Locator."""
    recorder = SiteRecorder()
    try:
        with recorder.recording():
            result = factory()
    except (Exception, SystemExit) as exc:
        raise UsageError(f"{label}() raised {describe_exception(exc)}; fix the factory so that it returns the model and data") from None
    model = result.get("model") if isinstance(result, Mapping) else None
    locator = Locator(model if isinstance(model, nn.Module) else None, recorder.sites, factory)
    return result, locator


def ignored_keys(result: Mapping[Any, Any], label: str) -> list[str]:
    """One notice per key of the factory's dict that the check does not read, saying why; a
    scheduler is recognised by its type, whatever its key."""
    notes = []
    for key, value in result.items():
        if key in KEYS:
            continue
        where = f"ignored key {key!r} of {label}()"
        if isinstance(value, torch.optim.lr_scheduler.LRScheduler):
            notes.append(
                f"{where}: the {type(value).__name__} scheduler is not stepped. Whether it steps per batch or "
                "per epoch is the training loop's choice, and the checks train one batch for a few steps: they "
                "use the learning rate it gave the optimizer when it was built (your first step's). "
                "`lint` (TD156) and `run` (TD428) check how the loop steps it"
            )
            continue
        close = difflib.get_close_matches(str(key), KEYS, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        notes.append(f"{where}: the check reads only 'model', 'data', 'loss_fn' and 'optimizer'{hint}")
    return notes


def validate(result: Any, label: str) -> dict[str, Any]:
    """The factory's mapping, checked: model, data, and the optional loss_fn and optimizer."""
    if not isinstance(result, Mapping):
        raise UsageError(
            f"{label}() returned {article(type(result).__name__)}; it must return a dict with 'model' and 'data' "
            "(and optionally 'loss_fn' and 'optimizer')"
        )
    missing = [key for key in ("model", "data") if key not in result]
    if missing:
        raise UsageError(f"{label}() returned a dict without {' and '.join(repr(k) for k in missing)}; it has {sorted(map(str, result))}")
    return check_parts(result["model"], result["data"], result.get("loss_fn"), result.get("optimizer"), label)


def check_parts(model: Any, data: Any, loss_fn: Any, optimizer: Any, label: str = "check()") -> dict[str, Any]:
    if not isinstance(model, nn.Module):
        raise UsageError(f"{label}: 'model' is {article(type(model).__name__)}, not a torch.nn.Module")
    if not isinstance(data, (DataLoader, tuple, list, torch.Tensor, dict)):
        raise UsageError(
            f"{label}: 'data' is {article(type(data).__name__)}; give a DataLoader or one batch as a tuple (inputs, targets)"
            + (" (wrap a Dataset: DataLoader(dataset, batch_size=...))" if isinstance(data, torch.utils.data.Dataset) else "")
        )
    if loss_fn is not None and not callable(loss_fn):
        raise UsageError(f"{label}: 'loss_fn' is {article(type(loss_fn).__name__)}, not callable")
    if optimizer is not None and not isinstance(optimizer, torch.optim.Optimizer):
        raise UsageError(f"{label}: 'optimizer' is {article(type(optimizer).__name__)}, not a torch.optim.Optimizer")
    return {"model": model, "data": data, "loss_fn": loss_fn, "optimizer": optimizer}

