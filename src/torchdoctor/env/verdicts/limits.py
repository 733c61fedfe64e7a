"""Verdicts on the limits a training job runs into, and on variables left set."""

from __future__ import annotations

from collections.abc import Iterator

from torchdoctor.core.finding import Finding, Severity
from torchdoctor.env.facts import EnvFacts
from torchdoctor.env.text import human_bytes
from torchdoctor.rules.env.low_open_file_limit import RULE as LOW_NOFILE
from torchdoctor.rules.env.small_shared_memory import RULE as SMALL_SHM
from torchdoctor.rules.performance.cpu_oversubscription import RULE as OVERSUBSCRIPTION
from torchdoctor.rules.performance.debug_variable_left_on import RULE as DEBUG_VARIABLE

SHM_MINIMUM = 1 << 30
NOFILE_MINIMUM = 4096

#: variable -> (values that switch it on, the rule's variant that says what it costs, severity)
DEBUG_SWITCHES: dict[str, tuple[tuple[str, ...], str | None, Severity]] = {
    "CUDA_LAUNCH_BLOCKING": (("1",), None, Severity.WARNING),
    "PYTORCH_NO_CUDA_MEMORY_CACHING": (("1",), "no-cuda-memory-caching", Severity.WARNING),
    "TORCH_DISTRIBUTED_DEBUG": (("DETAIL",), "distributed-debug", Severity.INFO),
}


def small_shm(facts: EnvFacts) -> Iterator[Finding]:
    size = facts.limits.shm_bytes
    if size is not None and size < SHM_MINIMUM:
        yield SMALL_SHM.finding(fields={"size": human_bytes(size)}, evidence={"shm_bytes": size})


def low_nofile(facts: EnvFacts) -> Iterator[Finding]:
    soft, hard = facts.limits.nofile_soft, facts.limits.nofile_hard
    if soft is None or soft >= NOFILE_MINIMUM:
        return
    if hard is not None and hard > soft:
        yield LOW_NOFILE.finding(fields={"soft": soft, "hard": hard, "raise_to": min(hard, 65536)})
    else:
        yield LOW_NOFILE.finding(fields={"soft": soft}, variant="at-hard-limit")


def oversubscription(facts: EnvFacts) -> Iterator[Finding]:
    limits = facts.limits
    cpus = limits.usable_cpus
    if cpus is None:
        return
    omp = facts.variables.get("OMP_NUM_THREADS", "")
    why_parts = []
    if limits.cpu_quota and (limits.cpus_online or 0) > cpus:
        why_parts.append(f"cgroup CPU quota {limits.cpu_quota:g}")
    if limits.cpus_affinity and limits.cpus_online and limits.cpus_affinity < limits.cpus_online:
        why_parts.append(f"CPU affinity {limits.cpus_affinity} of {limits.cpus_online}")
    why = f" ({', '.join(why_parts)})" if why_parts else ""
    threads = facts.torch.num_threads
    if threads is not None and threads > cpus:
        source = f" (OMP_NUM_THREADS={omp})" if omp else ""
        yield OVERSUBSCRIPTION.finding(fields={"what": f"torch runs {threads} threads for CPU work{source}",
                                               "cpus": cpus, "why": why})
    elif threads is None and omp.isdigit() and int(omp) > cpus:
        yield OVERSUBSCRIPTION.finding(fields={"what": f"OMP_NUM_THREADS={omp} asks for {omp} threads", "cpus": cpus,
                                               "why": why})


def debug_variables(facts: EnvFacts) -> Iterator[Finding]:
    for name, (values, variant, severity) in DEBUG_SWITCHES.items():
        value = facts.variables.get(name)
        if value is not None and value.strip() in values:
            yield DEBUG_VARIABLE.finding(fields={"name": name, "value": value}, variant=variant, severity=severity)
