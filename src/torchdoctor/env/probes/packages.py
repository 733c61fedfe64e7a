"""Installed packages: every torch on sys.path, the versions that must match it, and the
compiled extensions that link against it (which must be imported to know they still load)."""

from __future__ import annotations

import importlib.metadata as metadata
import os
import re
import sys
from collections.abc import Iterable, Sequence

from torchdoctor.env.facts import Installation

FAMILY = ("numpy", "torchvision", "torchaudio", "torchtext", "torchdata", "triton", "pytorch-triton")
MAX_EXTENSIONS = 25
_REQUIRES_TORCH = re.compile(r"^torch\s*(?:\[[^\]]*\])?\s*(?P<spec>[^;]*?)\s*(?:;(?P<marker>.*))?$")
_COMPILED = (".so", ".pyd")


def torch_installs(paths: Sequence[str] | None = None) -> list[Installation]:
    """Every `torch` package on sys.path, in import order (the first one is the one imported)."""
    found: list[Installation] = []
    seen: set[str] = set()
    for entry in paths if paths is not None else sys.path:
        folder = os.path.join(entry or os.getcwd(), "torch")
        if not os.path.isfile(os.path.join(folder, "__init__.py")):
            continue
        real = os.path.realpath(folder)
        if real in seen:
            continue
        seen.add(real)
        found.append(Installation(path=folder, version=_version_at(entry or os.getcwd())))
    return found


def _version_at(entry: str) -> str | None:
    for dist in metadata.distributions(path=[entry]):
        if (dist.metadata["Name"] or "").lower() == "torch":
            return dist.version
    version_file = os.path.join(entry, "torch", "version.py")
    try:
        with open(version_file, encoding="utf-8") as handle:
            match = re.search(r"^__version__\s*=\s*['\"]([^'\"]+)", handle.read(), re.M)
    except OSError:
        return None
    return match.group(1) if match else None


def family_versions(dists: Iterable[metadata.Distribution] | None = None) -> dict[str, str]:
    versions: dict[str, str] = {}
    for dist in dists if dists is not None else metadata.distributions():
        name = (dist.metadata["Name"] or "").lower()
        if name in FAMILY and name not in versions:
            versions[name] = dist.version
    return versions


def torch_requirement(dist: metadata.Distribution) -> str | None:
    """The distribution's own (unconditional) requirement on torch, e.g. "==2.5.1"."""
    for requirement in dist.requires or []:
        match = _REQUIRES_TORCH.match(requirement.strip())
        if match and not (match.group("marker") or "").strip().startswith("extra"):
            return match.group("spec").strip("() ") or ""
    return None


def dependents(dists: Iterable[metadata.Distribution] | None = None) -> list[tuple[str, str, list[str]]]:
    """(package, torch requirement, compiled top-level modules) for packages that require torch."""
    out: list[tuple[str, str, list[str]]] = []
    seen: set[str] = set()
    for dist in dists if dists is not None else metadata.distributions():
        name = dist.metadata["Name"] or ""
        if name.lower() in seen or name.lower() in ("torch", "torchdoctor"):
            continue
        requirement = torch_requirement(dist)
        if requirement is None:
            continue
        seen.add(name.lower())
        out.append((name, requirement, compiled_modules(dist)))
    return sorted(out)


def compiled_modules(dist: metadata.Distribution) -> list[str]:
    """Top-level modules of `dist` that contain a compiled extension."""
    modules: set[str] = set()
    for file in dist.files or []:
        parts = file.parts
        if not file.name.endswith(_COMPILED) or not parts or parts[0].endswith((".dist-info", ".data", ".libs")):
            continue
        top = parts[0] if len(parts) > 1 else file.name.split(".", 1)[0]
        if top.isidentifier():
            modules.add(top)
    return sorted(modules)
