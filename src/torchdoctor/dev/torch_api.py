"""The table of torch's public names and call signatures that lint reads (TD574), read off a real torch.

Lint never imports torch (it would cost a second per run), so what exists in `torch.nn` and which
keywords `nn.init.normal_` takes come from `linter/data/torch_api.json`, written here from the
installed torch (and torchvision, where it imports) and merged with what the file already holds:
run it once in each environment whose versions the table should cover, and a name is missing for
lint only when it is missing from every one of them.

    python -m torchdoctor.dev torch-api          # add this environment's torch to the table
"""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import warnings
from pathlib import Path
from typing import Any

TABLE = Path(__file__).resolve().parents[1] / "linter" / "data" / "torch_api.json"

#: the modules whose names and signatures the table holds (what training code calls by name)
MODULES = (
    "torch", "torch.nn", "torch.nn.functional", "torch.nn.init", "torch.optim", "torch.optim.lr_scheduler",
    "torch.utils.data", "torch.linalg", "torch.fft", "torch.functional", "torch.amp", "torch.autograd",
    "torchvision", "torchvision.transforms", "torchvision.datasets", "torchvision.models",
)


def public_names(module: Any) -> set[str]:
    """What `module.name` can reach: its public attributes and its submodules, imported or not."""
    names = {name for name in dir(module) if not name.startswith("_")}
    for info in pkgutil.iter_modules(getattr(module, "__path__", None) or []):
        if not info.name.startswith("_"):
            names.add(info.name)
    return names


def parameters(value: Any) -> list[str] | None:
    """The keyword names a call of `value` accepts; None when any keyword may be accepted
    (`**kwargs`), or when Python cannot tell (a builtin with no signature)."""
    if not callable(value):
        return None
    try:
        signature = inspect.signature(value)
    except (TypeError, ValueError):
        return None
    accepted = []
    for parameter in signature.parameters.values():
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            return None
        if parameter.kind is not inspect.Parameter.POSITIONAL_ONLY and parameter.kind is not inspect.Parameter.VAR_POSITIONAL:
            accepted.append(parameter.name)
    return accepted


def read_installed() -> tuple[dict[str, str], dict[str, dict[str, Any]]]:
    """(versions, modules) of this environment: each module's names and the keyword lists of its callables."""
    versions: dict[str, str] = {}
    modules: dict[str, dict[str, Any]] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in MODULES:
            try:
                module = importlib.import_module(name)
            except Exception:  # noqa: BLE001 - torchvision may be absent or built for another torch
                continue
            top = name.split(".")[0]
            versions.setdefault(top, str(getattr(importlib.import_module(top), "__version__", "?")))
            names = public_names(module)
            signatures = {}
            for attribute in sorted(names):
                try:
                    value = getattr(module, attribute)
                except Exception:  # noqa: BLE001 - a lazy submodule that fails to import
                    continue
                if inspect.isfunction(value) or inspect.isclass(value):
                    signatures[attribute] = parameters(value)
            modules[name] = {"names": sorted(names), "signatures": signatures}
    return versions, modules


def merge(table: dict[str, Any], versions: dict[str, str], modules: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The union of `table` and one environment: a name any version has exists; a callable
    accepts a keyword any version accepts, and anything where one version takes `**kwargs`."""
    seen = {top: sorted({*table.get("versions", {}).get(top, []), version}) for top, version in versions.items()}
    merged_versions = {**table.get("versions", {}), **seen}
    merged = dict(table.get("modules", {}))
    for name, read in modules.items():
        old = merged.get(name, {"names": [], "signatures": {}})
        signatures = dict(old["signatures"])
        for callee, accepted in read["signatures"].items():
            if callee not in signatures:
                signatures[callee] = accepted
            elif signatures[callee] is None or accepted is None:
                signatures[callee] = None
            else:
                signatures[callee] = sorted({*signatures[callee], *accepted})
        merged[name] = {"names": sorted({*old["names"], *read["names"]}), "signatures": dict(sorted(signatures.items()))}
    return {"versions": dict(sorted(merged_versions.items())), "modules": dict(sorted(merged.items()))}


def write(path: Path = TABLE) -> dict[str, str]:
    """Add this environment's torch (and torchvision) to the table at `path`; the versions read."""
    table = json.loads(path.read_text()) if path.exists() else {}
    versions, modules = read_installed()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(merge(table, versions, modules), indent=0, sort_keys=False) + "\n")
    return versions
