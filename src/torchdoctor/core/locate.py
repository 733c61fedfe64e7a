"""Which source lines belong to the user: every finding must point at one of them.

A frame is the user's when its file is not part of torch, the standard library, an installed
package or torchdoctor itself. An installed package is one under site-packages/dist-packages or
the interpreter's own folders, and also one found on `PYTHONPATH` or `sys.path` anywhere else
(`pip install --target DIR`, a shared folder of packages): there, the `*.dist-info/RECORD` of the
folder the package is imported from lists its files.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import sys
import sysconfig
import traceback
from collections.abc import Iterable
from pathlib import Path
from types import FrameType, TracebackType


@functools.lru_cache(maxsize=1)
def _library_roots() -> tuple[str, ...]:
    roots: set[str] = set()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            roots.add(os.path.realpath(path))
    for name in ("torch", "torchdoctor", "numpy", "rich", "pytest", "_pytest", "pluggy"):
        spec = importlib.util.find_spec(name) if name not in sys.modules else sys.modules[name].__spec__
        for location in (spec.submodule_search_locations or []) if spec else []:
            roots.add(os.path.realpath(location))
    return tuple(sorted(roots, key=len, reverse=True))


_OWN_ROOT = os.path.realpath(os.path.dirname(os.path.dirname(__file__)))


def is_own_file(filename: str) -> bool:
    """True for torchdoctor's own source files."""
    return bool(filename) and os.path.realpath(filename).startswith(_OWN_ROOT + os.sep)


@functools.lru_cache(maxsize=8192)
def is_user_file(filename: str) -> bool:
    """True for files a person wrote for this project (not torch, stdlib, packages, us)."""
    if not filename or filename.startswith("<"):
        return False
    path = os.path.realpath(filename)
    if "site-packages" in path.split(os.sep) or "dist-packages" in path.split(os.sep):
        return False
    if any(path == root or path.startswith(root + os.sep) for root in _library_roots()):
        return False
    return not _installed(path)


def _installed(path: str) -> bool:
    """True when a distribution installed in a `sys.path` folder that holds `path` lists the
    top-level package or module `path` belongs to."""
    for entry in sys.path:
        folder = os.path.realpath(entry or os.getcwd())
        if path.startswith(folder + os.sep):
            top = path[len(folder) + 1:].split(os.sep, 1)[0]
            if top.removesuffix(".py") in _distributed(folder):
                return True
    return False


@functools.lru_cache(maxsize=256)
def _distributed(folder: str) -> frozenset[str]:
    """The top-level names the `*.dist-info` folders in `folder` installed (from their RECORD).
    A source tree has none: an editable install keeps its dist-info in site-packages, and
    `setup.py develop` writes an egg-info, which is not read here."""
    names: set[str] = set()
    try:
        records = [entry.path for entry in os.scandir(folder) if entry.name.endswith(".dist-info")]
    except OSError:
        return frozenset()
    for record in records:
        try:
            with open(os.path.join(record, "RECORD"), encoding="utf-8") as lines:
                names.update(line.split(",", 1)[0].split("/", 1)[0].removesuffix(".py") for line in lines)
        except (OSError, UnicodeDecodeError):
            continue
    return frozenset(names)


def innermost_user_frame(frames: Iterable[tuple[str, int]]) -> tuple[str, int] | None:
    """The last (deepest) `(filename, line)` that is user code, from outermost-first frames."""
    found = None
    for filename, line in frames:
        if is_user_file(filename):
            found = (filename, line)
    return found


def traceback_frames(tb: TracebackType | None) -> list[tuple[str, int]]:
    """`(filename, line)` for every frame of a traceback, outermost first."""
    return [(f.filename, f.lineno or 0) for f in traceback.extract_tb(tb)]


def caller_in_user_code(skip: int = 1) -> tuple[str, int] | None:
    """The innermost user frame of the current call stack (cheap: no source is read, and the
    walk stops at the first user frame)."""
    frame = user_frame(sys._getframe(skip))
    return (frame.f_code.co_filename, frame.f_lineno) if frame is not None else None


def user_frame(frame: FrameType | None) -> FrameType | None:
    """The innermost frame at or above `frame` whose file is user code (None when there is none)."""
    while frame is not None and not is_user_file(frame.f_code.co_filename):
        frame = frame.f_back
    return frame


def short_path(filename: str) -> str:
    """A path for people to read: relative to the working directory below it, else `~/...` below
    the home folder (a label; `display_path` keeps the file usable by tools)."""
    shown = display_path(filename)
    home = os.path.expanduser("~")
    if os.path.isabs(shown) and home not in ("~", os.sep) and shown.startswith(home + os.sep):
        return "~" + shown[len(home):]
    return shown


def display_path(filename: str, base: Path | None = None) -> str:
    """A path relative to `base` (the working directory) when it lies below it."""
    base = base or Path.cwd()
    try:
        return str(Path(filename).resolve().relative_to(base.resolve()))
    except ValueError:
        return filename
