"""What `torch.utils.cpp_extension` would build an extension with: the C++ compiler, CUDA_HOME
(found the way cpp_extension finds it) and its nvcc, and the nvcc first on PATH."""

from __future__ import annotations

import os
import re

from torchdoctor.env.facts import BuildFacts
from torchdoctor.env.runner import Host


def build_facts(host: Host) -> BuildFacts:
    cxx = host.environ.get("CXX") or "c++"
    cxx_path = host.which(cxx.split()[0]) if cxx.strip() else None
    version = family = None
    if cxx_path is not None:
        version = (host.output([cxx_path, "-dumpfullversion", "-dumpversion"]) or "").strip() or None
        family = compiler_family(host.output([cxx_path, "--version"]) or "")
    cuda_home, source = find_cuda_home(host)
    nvcc = os.path.join(cuda_home, "bin", "nvcc") if cuda_home else None
    nvcc_on_path = host.which("nvcc")
    return BuildFacts(
        cxx=cxx,
        cxx_path=cxx_path,
        cxx_version=version,
        cxx_family=family,
        cuda_home=cuda_home,
        cuda_home_source=source,
        nvcc=nvcc if nvcc and host.exists(nvcc) else None,
        nvcc_version=nvcc_version(host, nvcc) if nvcc and host.exists(nvcc) else None,
        nvcc_on_path=nvcc_on_path,
        nvcc_on_path_version=nvcc_version(host, nvcc_on_path) if nvcc_on_path else None,
    )


def find_cuda_home(host: Host) -> tuple[str | None, str | None]:
    """CUDA_HOME, then CUDA_PATH, then nvcc on PATH, then /usr/local/cuda (cpp_extension's order)."""
    for name in ("CUDA_HOME", "CUDA_PATH"):
        if host.environ.get(name):
            return host.environ[name], name
    nvcc = host.which("nvcc")
    if nvcc is not None:
        return os.path.dirname(os.path.dirname(nvcc)), "nvcc on PATH"
    if host.exists("/usr/local/cuda"):
        return "/usr/local/cuda", "/usr/local/cuda"
    return None, None


def nvcc_version(host: Host, nvcc: str) -> str | None:
    match = re.search(r"release (\d+\.\d+)", host.output([nvcc, "--version"]) or "")
    return match.group(1) if match else None


def compiler_family(banner: str) -> str | None:
    if not banner:
        return None
    if "clang" in banner.lower():
        return "clang"
    if re.search(r"\b(gcc|g\+\+|GCC)\b", banner) or "Free Software Foundation" in banner:
        return "gcc"
    return "other"
