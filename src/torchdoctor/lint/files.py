"""Which files to lint: the paths given, folders walked, excludes applied gitignore-style.

Files named on the command line are always linted. Inside folders, `.py` files are linted
unless a pattern excludes them: the defaults below (virtual environments, caches, build
output), `[tool.torchdoctor] exclude`, `--exclude`, and the `.gitignore` files of the folders
walked (and of their parents up to the repository root). The build-output names (`build/`,
`dist/`, `_build/`) are excluded only when the folder is not a Python package: a
`mypackage/dist/__init__.py` is code (torch.distributed helpers are often named so), a
`dist/` of wheels is not. Folder symlinks are not followed, so a link loop cannot trap the
walk.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

DEFAULT_EXCLUDE = (
    ".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".ipynb_checkpoints", ".mypy_cache",
    ".nox", ".pants.d", ".pytest_cache", ".pytype", ".ruff_cache", ".svn", ".tox", ".venv", ".vscode",
    "__pycache__", "__pypackages__", "_build", "buck-out", "build", "dist", "node_modules",
    "site-packages", "venv",
)


#: default excludes that are also common names of real packages: excluded only when not a package
BUILD_OUTPUTS = frozenset({"build", "dist", "_build"})


@dataclass(frozen=True)
class Target:
    """A file to lint. `explicit` when the user named it (then it is linted even if excluded)."""

    path: Path
    explicit: bool


@dataclass(frozen=True)
class Skipped:
    """Something met on the way that is not linted, and why (becomes a notice)."""

    path: Path
    reason: str


class Patterns:
    """Gitignore-style patterns relative to `base`: `*`, `**`, `?`, `[...]`, `/` anchors,
    a trailing `/` for folders only, `!` to re-include. The last matching pattern wins."""

    def __init__(self, patterns: Iterable[str], base: Path) -> None:
        self.base = base
        self.rules: list[tuple[re.Pattern[str], bool, bool]] = []
        for raw in patterns:
            line = raw.rstrip("\n").rstrip()
            if not line or line.startswith("#"):
                continue
            negate = line.startswith("!")
            if negate:
                line = line[1:]
            dir_only = line.endswith("/")
            line = line.rstrip("/")
            if not line:
                continue
            anchored = "/" in line
            line = line.lstrip("/")
            regex = _translate(line)
            prefix = "" if anchored else r"(?:.*/)?"
            self.rules.append((re.compile(rf"^{prefix}{regex}$"), negate, dir_only))

    @classmethod
    def from_file(cls, path: Path) -> Patterns | None:
        try:
            return cls(path.read_text(encoding="utf-8", errors="replace").splitlines(), path.parent)
        except OSError:
            return None

    def decide(self, path: Path, is_dir: bool) -> bool | None:
        """True excluded, False re-included, None when no pattern speaks about `path`."""
        if not self.rules:
            return None
        try:
            rel = path.relative_to(self.base).as_posix()
        except ValueError:
            rel = path.name
        verdict: bool | None = None
        for regex, negate, dir_only in self.rules:
            if dir_only and not is_dir:
                continue
            if regex.match(rel):
                verdict = not negate
        return verdict


def _translate(pattern: str) -> str:
    out = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if pattern.startswith("**/", i):
            out.append(r"(?:.*/)?")
            i += 3
        elif pattern.startswith("/**", i) and i + 3 == len(pattern):
            out.append(r"/.*")
            i += 3
        elif char == "*":
            if pattern.startswith("**", i):
                out.append(r".*")
                i += 2
            else:
                out.append(r"[^/]*")
                i += 1
        elif char == "?":
            out.append(r"[^/]")
            i += 1
        elif char == "[":
            end = pattern.find("]", i + 1)
            if end == -1:
                out.append(re.escape(char))
                i += 1
            else:
                body = pattern[i + 1:end].replace("\\", "\\\\")
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = end + 1
        else:
            out.append(re.escape(char))
            i += 1
    return "".join(out)


class Excluder:
    """All exclude sources together; `.gitignore` files are added as the walk meets them."""

    def __init__(self, user: Patterns | None, respect_gitignore: bool = True) -> None:
        self.default = Patterns(DEFAULT_EXCLUDE, Path("/"))
        self.user = user
        self.respect_gitignore = respect_gitignore

    def excluded(self, path: Path, is_dir: bool, gitignores: Sequence[Patterns]) -> bool:
        for patterns in (self.user, *reversed(gitignores)):
            if patterns is None:
                continue
            verdict = patterns.decide(path, is_dir)
            if verdict is not None:
                return verdict
        if not self.default.decide(path, is_dir):
            return False
        return not (is_dir and path.name in BUILD_OUTPUTS and (path / "__init__.py").is_file())

    def parent_gitignores(self, folder: Path) -> list[Patterns]:
        """`.gitignore` files above `folder` up to the repository root (outermost first)."""
        if not self.respect_gitignore:
            return []
        found: list[Patterns] = []
        for parent in folder.parents:
            candidate = parent / ".gitignore"
            if candidate.is_file():
                patterns = Patterns.from_file(candidate)
                if patterns is not None:
                    found.append(patterns)
            if (parent / ".git").exists():
                break
        else:
            return []  # not inside a repository: parents' ignore files are not ours
        found.reverse()
        return found


def discover(paths: Sequence[Path], excluder: Excluder) -> Iterator[Target | Skipped]:
    """Every file to lint under `paths`, in a stable order, plus what was skipped and why."""
    seen: set[Path] = set()
    for path in paths:
        if path.is_dir():
            folder = path.absolute()
            gitignores = excluder.parent_gitignores(folder)
            yield from _walk(folder, excluder, gitignores, seen)
        else:
            key = path.absolute()
            if key not in seen:
                seen.add(key)
                yield Target(path, explicit=True)


def _walk(folder: Path, excluder: Excluder, gitignores: list[Patterns], seen: set[Path]) -> Iterator[Target | Skipped]:
    own = Patterns.from_file(folder / ".gitignore") if excluder.respect_gitignore else None
    active = [*gitignores, own] if own is not None and own.rules else gitignores
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError as exc:
        yield Skipped(folder, f"cannot list the folder: {exc.strerror}")
        return
    for entry in entries:
        path = Path(entry.path)
        try:
            is_link = entry.is_symlink()
            is_dir = entry.is_dir(follow_symlinks=False)
        except OSError as exc:
            yield Skipped(path, exc.strerror or "cannot read")
            continue
        if is_dir:
            if not excluder.excluded(path, True, active):
                yield from _walk(path, excluder, active, seen)
            continue
        if not entry.name.endswith(".py") or excluder.excluded(path, False, active):
            continue
        if is_link and not path.exists():
            yield Skipped(path, "a symbolic link that leads nowhere (broken, or a loop)")
            continue
        if is_link and path.is_dir():
            continue  # a link to a folder named *.py: folders behind links are not walked
        if path not in seen:
            seen.add(path)
            yield Target(path, explicit=False)
