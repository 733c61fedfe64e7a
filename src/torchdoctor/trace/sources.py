"""Where a registration's source is: a file in the PyTorch repository at the installed version,
a file generated at build time (not in the repository), or a Python file of the install.

Registration paths are the build machine's (`/__w/pytorch/pytorch/aten/src/ATen/...`); the
repository path is what follows the build root. Generated files (`build/...`,
`torch/csrc/autograd/generated/...`) exist only in the build, so their link goes to the yaml
entry they were generated from. Links name the release tag of the installed torch
(`v2.13.0`), or its commit for builds that are not a release.

No torch here: the version and commit are passed in.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

REPOSITORY = "https://github.com/pytorch/pytorch"
#: where the repository's top-level folders start in a build machine's path
_ROOTS = ("/build/aten/", "/build/torch/", "/build/", "/torch/csrc/", "/aten/src/", "/c10/", "/caffe2/", "/functorch/", "/third_party/")
_RELEASE = re.compile(r"^\d+\.\d+\.\d+$")
DERIVATIVES_PATH = "tools/autograd/derivatives.yaml"


@dataclass(frozen=True)
class Version:
    """The installed torch: `2.13.0+cpu`, its commit, and the git ref links use."""

    version: str
    commit: str | None

    @property
    def tag(self) -> str | None:
        public = self.version.split("+", 1)[0]
        return f"v{public}" if _RELEASE.match(public) else None

    @property
    def ref(self) -> str:
        return self.tag or self.commit or "main"

    def url(self, path: str, line: int | None = None) -> str:
        return f"{REPOSITORY}/blob/{self.ref}/{path}" + (f"#L{line}" if line else "")


@dataclass(frozen=True)
class Source:
    """A registration's file as a repository path (None when it is not in the repository)."""

    file: str
    line: int | None
    path: str | None  # repository-relative, e.g. aten/src/ATen/autocast_mode.cpp
    generated: bool

    @property
    def where(self) -> str:
        shown = self.path or self.file
        return f"{shown}:{self.line}" if self.line else shown


def repository_path(file: str) -> tuple[str | None, bool]:
    """(repository path, generated at build time) of a registration's file."""
    normalized = file.replace("\\", "/")
    if "/site-packages/torch/" in normalized:  # a Python registration of the install itself
        return "torch/" + normalized.rsplit("/site-packages/torch/", 1)[1], False
    found = [(normalized.find(root), root) for root in _ROOTS if root in normalized]
    if not found:
        return None, False
    index, _ = min(found)
    path = normalized[index + 1:]
    return path, path.startswith("build/") or "/generated/" in path


def source(file: str, line: int | None) -> Source:
    path, generated = repository_path(file)
    return Source(file=file, line=line, path=path, generated=generated)
