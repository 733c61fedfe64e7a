"""One line of facts per probe group: the text report's ✅/❌/⚠️ list, readable in a bug report."""

from __future__ import annotations

import os
from collections.abc import Iterable

from torchdoctor.core.finding import Finding
from torchdoctor.core.report import CheckResult, Status
from torchdoctor.env.facts import EnvFacts
from torchdoctor.env.text import human_bytes

TITLES = {
    "platform": "Python & OS",
    "torch": "PyTorch",
    "packages": "Packages",
    "gpu": "GPU & driver",
    "libraries": "CUDA libraries",
    "build": "Extension build",
    "limits": "System limits",
    "variables": "Environment variables",
}


def checks(facts: EnvFacts, findings_by_group: dict[str, list[Finding]], rules_by_group: dict[str, tuple[str, ...]]) -> list[CheckResult]:
    out = []
    for group, title in TITLES.items():
        found = findings_by_group.get(group, [])
        detail, applicable = SUMMARIES[group](facts)
        out.append(CheckResult(
            name=group, title=title, status=Status.of(found, applicable), detail=detail,
            rules=rules_by_group.get(group, ()),
        ))
    return out


def _platform(facts: EnvFacts) -> tuple[str, bool]:
    p = facts.platform
    if p.python is None:
        return "not collected", False
    system = " ".join(part for part in (p.system, p.release, p.machine) if part)
    parts = [f"Python {p.python}" + (f" ({p.implementation})" if p.implementation else ""), system, p.libc or ""]
    return _join(parts), True


def _torch(facts: EnvFacts) -> tuple[str, bool]:
    t = facts.torch
    if not t.importable:
        return f"import failed: {t.import_error}", True
    build = f"CUDA {t.cuda}" if t.cuda else f"ROCm {t.hip}" if t.hip else "CPU-only build"
    parts = [f"torch {t.version}", build]
    if t.cudnn:
        parts.append(f"cuDNN {t.cudnn}")
    if t.nccl:
        parts.append(f"NCCL {t.nccl}")
    if t.compiler:
        parts.append(f"built with {t.compiler}")
    if t.cxx11_abi is not None:
        parts.append(f"C++11 ABI {'on' if t.cxx11_abi else 'off'}")
    if t.path:
        parts.append(f"at {_short(t.path)}")
    return _join(parts), True


def _packages(facts: EnvFacts) -> tuple[str, bool]:
    p = facts.packages
    parts = [f"{name} {version}" for name, version in sorted(p.versions.items())]
    installs = len(p.torch_installs)
    if installs:
        parts.append(f"{installs} torch install{'s' if installs != 1 else ''} on sys.path")
    if p.imports:
        failed = sum(not r.ok for r in p.imports)
        parts.append(f"{len(p.imports)} compiled extension(s) imported" + (f", {failed} failed" if failed else ""))
    return _join(parts) or "not collected", True


def _gpu(facts: EnvFacts) -> tuple[str, bool]:
    n, t = facts.nvidia, facts.torch
    if not n.gpus:
        reason = n.error or ("nvidia-smi not found" if not n.smi else "nvidia-smi lists none")
        torch_side = "torch has no CUDA" if not t.cuda else f"torch sees {len(t.gpus)} GPU(s)"
        return f"no NVIDIA GPU ({reason}); {torch_side}", bool(t.cuda and t.gpus)
    names = ", ".join(f"{g.index}: {g.name} (sm {g.capability})" for g in n.gpus)
    parts = [f"driver {n.driver} (CUDA ≤ {n.driver_cuda})", names]
    if t.cuda:
        parts.append(f"torch sees {len(t.gpus)}" if t.cuda_available else "torch cannot use them")
    if "CUDA_VISIBLE_DEVICES" in facts.variables:
        parts.append(f"CUDA_VISIBLE_DEVICES={facts.variables['CUDA_VISIBLE_DEVICES']}")
    return _join(parts), True


def _libraries(facts: EnvFacts) -> tuple[str, bool]:
    libraries = facts.torch.mapped_libraries
    if not libraries:
        return "no CUDA library loaded (CPU-only torch)" if not facts.torch.cuda else "no CUDA library loaded", False
    return _join(f"{name} from {_short(os.path.dirname(path))}" for name, path in sorted(libraries.items())), True


def _build(facts: EnvFacts) -> tuple[str, bool]:
    b = facts.build
    if b.cxx is None and b.nvcc is None and b.cuda_home is None:
        return "not collected", False
    compiler = f"{b.cxx} = {b.cxx_family or '?'} {b.cxx_version}" if b.cxx_path else f"no C++ compiler ({b.cxx} not found)"
    nvcc = f"nvcc {b.nvcc_version} at {b.nvcc} (CUDA_HOME via {b.cuda_home_source})" if b.nvcc else "no nvcc"
    parts = [compiler, nvcc]
    if b.nvcc_on_path and b.nvcc_on_path != b.nvcc:
        parts.append(f"PATH has nvcc {b.nvcc_on_path_version} at {b.nvcc_on_path}")
    if facts.torch.compiler:
        parts.append(f"torch built with {facts.torch.compiler}")
    return _join(parts), True


def _limits(facts: EnvFacts) -> tuple[str, bool]:
    lim = facts.limits
    usable = lim.usable_cpus
    cpus = f"{usable} usable CPU{'s' if usable != 1 else ''}" if usable is not None else "CPUs not collected"
    detail = [f"{n} {what}" for n, what in ((lim.cpus_online, "online"), (lim.cpus_affinity, "in affinity")) if n]
    if lim.cpu_quota:
        detail.append(f"quota {lim.cpu_quota:g}")
    parts = [f"{cpus} ({', '.join(detail)})" if detail else cpus]
    if facts.torch.num_threads is not None:
        parts.append(f"torch threads {facts.torch.num_threads}")
    if lim.shm_bytes is not None:
        parts.append(f"/dev/shm {human_bytes(lim.shm_bytes)}")
    if lim.nofile_soft is not None:
        parts.append(f"open files {lim.nofile_soft}")
    return _join(parts), True


def _variables(facts: EnvFacts) -> tuple[str, bool]:
    shown = [f"{name}={value}" for name, value in facts.variables.items() if name not in ("LD_LIBRARY_PATH", "PYTHONPATH")]
    shown += [f"{name} set" for name in ("LD_LIBRARY_PATH", "PYTHONPATH") if name in facts.variables]
    return (", ".join(shown) if shown else "none of NCCL_*, TORCH_*, CUDA_*, MASTER_*, OMP_*, ... set"), True


def _join(parts: Iterable[str]) -> str:
    return " · ".join(p for p in parts if p)


def _short(path: str) -> str:
    home = os.path.expanduser("~")
    return "~" + path[len(home):] if home not in ("", "/") and path.startswith(home + os.sep) else path


SUMMARIES = {
    "platform": _platform, "torch": _torch, "packages": _packages, "gpu": _gpu,
    "libraries": _libraries, "build": _build, "limits": _limits, "variables": _variables,
}
