"""Where things were made: the user's lines that findings point at.

While the factory runs, `SiteRecorder` notes the line that created each module, optimizer,
DataLoader and tensor (the innermost frame of user code, outside the object's own `__init__`).
`Locator` answers "which line should a person change?" for a module name, an attribute, the
optimizer, the data, falling back on `inspect` (class and `self.x = ...` lines) and finally on
the factory's `return` line when nothing was recorded (e.g. `torchdoctor.check(...)` called
directly).
"""

from __future__ import annotations

import ast
import contextlib
import functools
import inspect
import os
import re
import sys
import textwrap
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

import torch
from torch.overrides import TorchFunctionMode
from torch.utils.data import DataLoader

from torchdoctor.core.locate import display_path, is_user_file

#: tensors whose creation line is remembered while the factory runs (bounded: big data
#: pipelines create millions of small tensors and only the final ones matter)
MAX_TENSOR_SITES = 50_000


@dataclass(frozen=True)
class Site:
    """A line of user code, with the path as the user should see it."""

    file: str
    line: int

    @property
    def shown(self) -> str:
        return f"{display_path(self.file)}:{self.line}"

    def where(self) -> dict[str, Any]:
        """Keyword arguments for `Rule.finding(file=..., line=...)`."""
        return {"file": display_path(self.file), "line": self.line}


_TOOL = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def user_site(frame: FrameType | None, skip_self: object = None) -> Site | None:
    """The innermost user frame at or above `frame` (skipping torchdoctor's frames it starts
    in), below the next torchdoctor frame: a call the check itself makes (the model, the loss)
    has no user line of its own. Frames whose
    `self` is `skip_self` (the object being constructed) are skipped, so a class's own
    `__init__` does not count."""
    while frame is not None and frame.f_code.co_filename.startswith(_TOOL):
        frame = frame.f_back  # start from the first frame outside torchdoctor
    while frame is not None:
        filename = frame.f_code.co_filename
        if filename.startswith(_TOOL):
            return None
        if is_user_file(filename) and (skip_self is None or frame.f_locals.get("self") is not skip_self):
            return Site(filename, frame.f_lineno)
        frame = frame.f_back
    return None


def caller_site(depth: int = 1) -> Site | None:
    """The innermost user frame of the current stack (depth frames above the caller)."""
    return user_site(sys._getframe(depth + 1))


@dataclass
class CreationSites:
    """Lines that created objects during the factory call, keyed by object id (with the object
    kept alive, so an id is never reused while we hold it)."""

    objects: dict[int, tuple[Any, Site]] = field(default_factory=dict)
    tensors: dict[int, Site] = field(default_factory=dict)

    def of(self, obj: object) -> Site | None:
        entry = self.objects.get(id(obj))
        if entry is not None and entry[0] is obj:
            return entry[1]
        return self.tensors.get(id(obj))


class SiteRecorder:
    """Records creation lines of modules, optimizers, DataLoaders and tensors while active.

    It patches `__init__` of `nn.Module`, `Optimizer` and `DataLoader` for the duration of the
    factory call only, and watches tensor-producing torch calls with a TorchFunctionMode.
    """

    def __init__(self) -> None:
        self.sites = CreationSites()

    @contextlib.contextmanager
    def recording(self) -> Iterator[CreationSites]:
        patched: list[tuple[type[Any], Callable[..., Any]]] = []
        for cls in (torch.nn.Module, torch.optim.Optimizer, DataLoader):
            original = cls.__dict__["__init__"]
            patched.append((cls, original))
            cls.__init__ = self._wrap_init(original)  # type: ignore[method-assign]
        from_numpy = torch.from_numpy
        torch.from_numpy = self._wrap_from_numpy(from_numpy)  # type: ignore[assignment]
        try:
            with _TensorSites(self.sites):
                yield self.sites
        finally:
            torch.from_numpy = from_numpy
            for patched_class, original in patched:
                patched_class.__init__ = original

    def _wrap_from_numpy(self, original: Callable[[Any], torch.Tensor]) -> Callable[[Any], torch.Tensor]:
        """torch.from_numpy is not a torch function a mode can see: remember its line here."""
        tensors = self.sites.tensors

        @functools.wraps(original)
        def from_numpy(array: Any) -> torch.Tensor:
            result = original(array)
            site = user_site(sys._getframe(1))
            if site is not None and len(tensors) < MAX_TENSOR_SITES:
                key = id(result)
                tensors[key] = site
                weakref.finalize(result, tensors.pop, key, None)
            return result

        return from_numpy

    def _wrap_init(self, original: Callable[..., Any]) -> Callable[..., Any]:
        sites = self.sites

        @functools.wraps(original)
        def __init__(obj: Any, *args: Any, **kwargs: Any) -> None:
            if id(obj) not in sites.objects:
                site = user_site(sys._getframe(1), skip_self=obj)
                if site is not None:
                    sites.objects[id(obj)] = (obj, site)
            original(obj, *args, **kwargs)

        return __init__


class _TensorSites(TorchFunctionMode):
    """Remembers the user line that produced each tensor (by id, forgotten when it dies)."""

    def __init__(self, sites: CreationSites) -> None:
        super().__init__()
        self.sites = sites

    def __torch_function__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        tensors = self.sites.tensors
        if isinstance(result, torch.Tensor) and result.dim() > 0 and len(tensors) < MAX_TENSOR_SITES:
            site = user_site(sys._getframe(1))
            if site is not None:
                key = id(result)
                tensors[key] = site
                weakref.finalize(result, tensors.pop, key, None)
        return result


# --- source lines found with inspect -------------------------------------------------------


@functools.lru_cache(maxsize=1024)
def _source(obj: Any) -> tuple[str, int, tuple[str, ...]] | None:
    try:
        filename = inspect.getsourcefile(obj)
        lines, start = inspect.getsourcelines(obj)
    except (OSError, TypeError):
        return None
    if not filename or not is_user_file(filename):
        return None
    return filename, max(start, 1), tuple(lines)


def definition_site(obj: Any) -> Site | None:
    """The `class`/`def` line of a user-defined class or function."""
    found = _source(obj)
    if found is None:
        return None
    filename, start, lines = found
    for offset, text in enumerate(lines):  # skip decorators
        if text.lstrip().startswith(("class ", "def ", "async def ")):
            return Site(filename, start + offset)
    return Site(filename, start)


def attribute_site(cls: type, attribute: str) -> Site | None:
    """The `self.<attribute> = ...` line in the source of `cls` or a user-defined base class."""
    pattern = re.compile(rf"\bself\.{re.escape(attribute)}\s*(:[^=]+)?=(?!=)")
    for klass in cls.__mro__:
        found = _source(klass)
        if found is None:
            continue
        filename, start, lines = found
        for offset, text in enumerate(lines):
            if pattern.search(text):
                return Site(filename, start + offset)
    return None


def return_site(func: Callable[..., Any]) -> Site | None:
    """The last `return` line of a user function (the factory's "make() line")."""
    found = _source(func)
    if found is None:
        return definition_site(func)
    filename, start, lines = found
    try:
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except SyntaxError:
        return Site(filename, start)
    returns = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Return)]
    return Site(filename, start + max(returns) - 1) if returns else Site(filename, start)


class Locator:
    """Answers "which user line?" for the objects under check."""

    def __init__(self, model: Any, sites: CreationSites | None = None, factory: Callable[..., Any] | None = None,
                 fallback: Site | None = None) -> None:
        self.model = model
        self.sites = sites or CreationSites()
        self.factory = factory
        self._fallback = fallback
        self._modules = dict(model.named_modules()) if model is not None else {}

    @property
    def fallback(self) -> Site | None:
        """The factory's return line, or the line that called `torchdoctor.check`."""
        if self.factory is not None:
            site = return_site(self.factory)
            if site is not None:
                return site
        return self._fallback

    def of(self, obj: Any) -> Site | None:
        """Where `obj` was created, if it was created while the factory ran."""
        return self.sites.of(obj)

    def module(self, name: str) -> Site | None:
        """The line that created module `name` (a qualified name; "" is the root), or the
        `self.<attr> = ...` line of its nearest user-defined parent, or its class line."""
        module = self._modules.get(name)
        if module is not None:
            site = self.of(module)
            if site is not None:
                return site
        parts = name.split(".") if name else []
        for depth in range(len(parts), 0, -1):
            parent = self._modules.get(".".join(parts[: depth - 1]))
            if parent is None:
                continue
            site = attribute_site(type(parent), parts[depth - 1])
            if site is not None:
                return site
        if module is not None:
            site = definition_site(type(module))
            if site is not None:
                return site
        return self.of(self.model) or self.fallback

    def parameter(self, name: str) -> Site | None:
        owner, _, attribute = name.rpartition(".")
        module = self._modules.get(owner)
        if module is not None and type(module).__module__.split(".")[0] != "torch":
            site = attribute_site(type(module), attribute)
            if site is not None:
                return site
        return self.module(owner)

    def attribute(self, owner: Any, attribute: str) -> Site | None:
        return attribute_site(type(owner), attribute) or self.of(owner) or definition_site(type(owner)) or self.fallback

    def best(self, *candidates: Site | None) -> Site | None:
        """The first known site, else the fallback."""
        for candidate in candidates:
            if candidate is not None:
                return candidate
        return self.fallback


def where(site: Site | None) -> dict[str, Any]:
    """`file=`/`line=` keyword arguments for a finding (None when no user line is known)."""
    return site.where() if site is not None else {"file": None, "line": None}
