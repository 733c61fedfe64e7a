"""Python, the operating system, the limits a training job runs into, and the variables that matter."""

from __future__ import annotations

import os
import platform
import re
import sys
from collections.abc import Mapping

from torchdoctor.env.facts import LimitFacts, PlatformFacts
from torchdoctor.env.redact import redact_variables
from torchdoctor.env.runner import Host

#: variables that change how torch, CUDA, NCCL, Gloo, OpenMP and launchers behave
RELEVANT_PREFIXES = (
    "NCCL_", "TORCH_", "TORCHELASTIC_", "TORCHINDUCTOR_", "PYTORCH_", "CUDA_", "CUDNN_", "CUBLAS_",
    "NVIDIA_", "MASTER_", "GLOO_", "OMP_", "MKL_", "KMP_", "HIP_", "ROCR_", "TRITON_", "NVCC_",
)
RELEVANT_NAMES = (
    "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "NODE_RANK",
    "LD_LIBRARY_PATH", "LD_PRELOAD", "PYTHONPATH", "CC", "CXX", "CONDA_PREFIX", "VIRTUAL_ENV",
)


def platform_facts() -> PlatformFacts:
    libc, version = platform.libc_ver()
    return PlatformFacts(
        python=platform.python_version(),
        implementation=platform.python_implementation(),
        executable=sys.executable,
        system=platform.system(),
        release=platform.release(),
        machine=platform.machine(),
        libc=f"{libc} {version}".strip() or None,
    )


def relevant_variables(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables that matter for torch, with secrets redacted, sorted by name."""
    chosen = {
        name: value for name, value in environ.items()
        if name.startswith(RELEVANT_PREFIXES) or name in RELEVANT_NAMES
    }
    return redact_variables(dict(sorted(chosen.items())))


def limit_facts(host: Host) -> LimitFacts:
    nofile = _nofile()
    return LimitFacts(
        cpus_online=os.cpu_count(),
        cpus_affinity=len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        cpu_quota=cgroup_cpu_quota(host),
        shm_bytes=_shm_bytes(),
        nofile_soft=nofile[0] if nofile else None,
        nofile_hard=nofile[1] if nofile else None,
    )


def cgroup_cpu_quota(host: Host) -> float | None:
    """The CPU quota of this process's cgroup in CPUs (v2 `cpu.max` or v1 CFS), None if unlimited."""
    groups = host.read("/proc/self/cgroup") or ""
    v2 = re.search(r"^0::(\S*)$", groups, re.M)
    if v2 is not None:
        text = host.read(f"/sys/fs/cgroup{v2.group(1).rstrip('/')}/cpu.max") or host.read("/sys/fs/cgroup/cpu.max")
        match = re.match(r"(\d+)\s+(\d+)", text or "")
        if match:
            return int(match.group(1)) / int(match.group(2))
    quota = host.read("/sys/fs/cgroup/cpu/cpu.cfs_quota_us") or host.read("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us")
    period = host.read("/sys/fs/cgroup/cpu/cpu.cfs_period_us") or host.read("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us")
    try:
        if quota and period and int(quota) > 0:
            return int(quota) / int(period)
    except ValueError:
        pass
    return None


def _shm_bytes() -> int | None:
    try:
        stat = os.statvfs("/dev/shm")
    except OSError:
        return None
    return stat.f_frsize * stat.f_blocks


def _nofile() -> tuple[int, int] | None:
    try:
        import resource
    except ImportError:  # Windows
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    infinity = resource.RLIM_INFINITY
    return (soft if soft != infinity else 1 << 62, hard if hard != infinity else 1 << 62)
