"""Verdicts on building extensions: CUDA libraries loaded, nvcc, CUDA_HOME, the host compiler."""

from __future__ import annotations

import os
from collections.abc import Iterator

from torchdoctor.core.finding import Finding, Severity
from torchdoctor.env import versions
from torchdoctor.env.facts import EnvFacts
from torchdoctor.rules.env.cuda_home_without_nvcc import RULE as CUDA_HOME_WITHOUT_NVCC
from torchdoctor.rules.env.host_compiler_outside_nvcc_range import RULE as COMPILER_RANGE
from torchdoctor.rules.env.nvcc_cuda_major_mismatch import RULE as NVCC_MISMATCH
from torchdoctor.rules.env.system_cuda_library_shadows_wheel import RULE as LIBRARY_SHADOWS


def _under(path: str, root: str) -> bool:
    root = os.path.normpath(root)
    return os.path.normpath(path) == root or os.path.normpath(path).startswith(root + os.sep)


def library_shadows(facts: EnvFacts) -> Iterator[Finding]:
    torch = facts.torch
    if not torch.cuda or not torch.path:
        return
    environment = os.path.dirname(torch.path)  # site-packages: torch/lib and nvidia/*/lib live here
    search = [p for p in facts.variables.get("LD_LIBRARY_PATH", "").split(os.pathsep) if p]
    cudnn_clash = (versions.numbers(torch.cudnn)[:1] != versions.numbers(torch.cudnn_compiled)[:1]
                   and torch.cudnn is not None and torch.cudnn_compiled is not None)
    for library, path in sorted(torch.mapped_libraries.items()):
        base = library.split(".so", 1)[0]
        bundled = torch.bundled_libraries.get(base)
        folder = os.path.dirname(path)
        if bundled is None or _under(path, environment) or os.path.dirname(bundled) == folder:
            continue
        origin = " (on LD_LIBRARY_PATH)" if any(_under(folder, p) for p in search) else ""
        severity = Severity.ERROR if base == "libcudnn" and cudnn_clash else None
        fields: dict[str, object] = {"library": library, "folder": folder, "origin": origin, "bundled": bundled}
        if severity is Severity.ERROR:  # the cuDNN loaded is not the one torch was compiled against
            fields = {"cudnn": torch.cudnn, "folder": folder, "origin": origin, "cudnn_compiled": torch.cudnn_compiled,
                      "bundled": bundled}
        yield LIBRARY_SHADOWS.finding(
            fields=fields, severity=severity, variant="cudnn-version" if severity is Severity.ERROR else None,
            evidence={"loaded": path, "bundled": bundled},
        )


def nvcc_mismatch(facts: EnvFacts) -> Iterator[Finding]:
    torch, build = facts.torch, facts.build
    built, toolkit = versions.numbers(torch.cuda), versions.numbers(build.nvcc_version)
    if not built or not toolkit or built[0] == toolkit[0]:
        return
    yield NVCC_MISMATCH.finding(
        fields={"nvcc": build.nvcc, "nvcc_version": build.nvcc_version, "version": torch.version, "cuda": torch.cuda,
                "cuda_major": built[0], "nvcc_major": toolkit[0]},
        evidence={"cuda_home": build.cuda_home, "found_by": build.cuda_home_source},
    )


def cuda_home_without_nvcc(facts: EnvFacts) -> Iterator[Finding]:
    build = facts.build
    if not facts.torch.cuda or build.cuda_home_source not in ("CUDA_HOME", "CUDA_PATH") or build.nvcc:
        return
    yield CUDA_HOME_WITHOUT_NVCC.finding(fields={"source": build.cuda_home_source, "cuda_home": build.cuda_home,
                                                 "cuda": facts.torch.cuda})


def compiler_range(facts: EnvFacts) -> Iterator[Finding]:
    build = facts.build
    if not facts.torch.cuda or build.cxx_family != "gcc" or len(build.gcc_range) != 2 or not build.nvcc_version:
        return
    have = versions.numbers(build.cxx_version)
    low, high = (versions.numbers(v) for v in build.gcc_range)
    if not have or low <= have < high:
        return
    suggest = high[0] - 1 if have >= high else low[0]
    yield COMPILER_RANGE.finding(
        fields={"cxx": build.cxx_path or build.cxx, "cxx_version": build.cxx_version, "low": build.gcc_range[0],
                "high": build.gcc_range[1], "nvcc_version": build.nvcc_version, "suggest": suggest},
    )
