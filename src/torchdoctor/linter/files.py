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
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pathspec

#: folders never linted inside a walk (matched by the folder's own name, wherever it lies)
DEFAULT_EXCLUDE = frozenset({
    ".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".ipynb_checkpoints", ".mypy_cache",
    ".nox", ".pants.d", ".pytest_cache", ".pytype", ".ruff_cache", ".svn", ".tox", ".venv", ".vscode",
    "__pycache__", "__pypackages__", "_build", "buck-out", "build", "dist", "node_modules",
    "site-packages", "venv",
})


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
    """Gitignore-style patterns relative to `base` (git's own rules, through pathspec):
    `*`, `**`, `?`, `[...]`, `/` anchors, a trailing `/` for folders only, `!` to re-include.
    The last matching pattern wins. pathspec is imported only here: most lint runs (a file,
    a folder outside a repository) read no patterns and need not pay for its import."""

    def __init__(self, patterns: Iterable[str], base: Path) -> None:
        import pathspec

        self.base = base
        self.spec: pathspec.GitIgnoreSpec = pathspec.GitIgnoreSpec.from_lines(patterns)

    def __bool__(self) -> bool:
        return bool(self.spec.patterns)

    @classmethod
    def from_file(cls, path: Path) -> Patterns | None:
        try:
            return cls(path.read_text(encoding="utf-8", errors="replace").splitlines(), path.parent)
        except OSError:
            return None

    def decide(self, path: Path, is_dir: bool) -> bool | None:
        """True excluded, False re-included, None when no pattern speaks about `path`."""
        if not self:
            return None
        try:
            rel = path.relative_to(self.base).as_posix()
        except ValueError:
            rel = path.name
        return self.spec.check_file(rel + "/" if is_dir else rel).include


class Excluder:
    """All exclude sources together; `.gitignore` files are added as the walk meets them."""

    def __init__(self, user: Patterns | None, respect_gitignore: bool = True) -> None:
        self.user = user
        self.respect_gitignore = respect_gitignore

    def excluded(self, path: Path, is_dir: bool, gitignores: Sequence[Patterns]) -> bool:
        for patterns in (self.user, *reversed(gitignores)):
            if patterns is None:
                continue
            verdict = patterns.decide(path, is_dir)
            if verdict is not None:
                return verdict
        if not is_dir or path.name not in DEFAULT_EXCLUDE:
            return False
        return not (path.name in BUILD_OUTPUTS and (path / "__init__.py").is_file())

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
    active = [*gitignores, own] if own else gitignores
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
