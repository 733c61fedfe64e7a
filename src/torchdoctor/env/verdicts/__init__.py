"""Verdicts: facts in, findings out. Pure functions of `EnvFacts`, so every one of them is tested
on both sides (facts that must be flagged, similar facts that must not) without the machine."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from torchdoctor.core.finding import Finding
from torchdoctor.env.facts import EnvFacts
from torchdoctor.env.verdicts import build, gpu, install, limits

Verdict = Callable[[EnvFacts], Iterable[Finding]]

#: probe group -> its verdicts, in the order the report lists the groups
VERDICTS: dict[str, tuple[Verdict, ...]] = {
    "platform": (),
    "torch": (install.import_fails,),
    "packages": (install.multiple_installs, install.version_skew, install.numpy_mismatch, install.extension_binaries),
    "gpu": (gpu.cpu_wheel, gpu.driver_too_old, gpu.arch_not_in_wheel, gpu.cuda_unusable, gpu.visible_devices),
    "libraries": (build.library_shadows,),
    "build": (build.nvcc_mismatch, build.cuda_home_without_nvcc, build.compiler_range),
    "limits": (limits.small_shm, limits.low_nofile, limits.oversubscription),
    "variables": (limits.debug_variables,),
}

#: probe group -> the rules its verdicts report (JUnit test cases and `report.checks` claim them)
RULES: dict[str, tuple[str, ...]] = {
    "platform": (),
    "torch": ("TD600",),
    "packages": ("TD605", "TD606", "TD607", "TD609"),
    "gpu": ("TD601", "TD602", "TD603", "TD604", "TD616"),
    "libraries": ("TD608",),
    "build": ("TD610", "TD611", "TD612"),
    "limits": ("TD613", "TD614", "TD615"),
    "variables": ("TD617",),
}


def judge(facts: EnvFacts) -> list[Finding]:
    """Every finding the facts call for."""
    return [finding for findings in judge_by_group(facts).values() for finding in findings]


def judge_by_group(facts: EnvFacts) -> dict[str, list[Finding]]:
    return {group: list(_run(verdicts, facts)) for group, verdicts in VERDICTS.items()}


def _run(verdicts: Iterable[Verdict], facts: EnvFacts) -> Iterator[Finding]:
    for verdict in verdicts:
        yield from verdict(facts)
