"""Verdicts on torch and the GPUs: CPU wheels, drivers, architectures, CUDA_VISIBLE_DEVICES."""

from __future__ import annotations

import re
from collections.abc import Iterator

from torchdoctor.core.finding import Finding, Severity
from torchdoctor.env import versions
from torchdoctor.env.facts import EnvFacts, Gpu
from torchdoctor.rules.env.cpu_wheel_on_gpu_machine import RULE as CPU_WHEEL
from torchdoctor.rules.env.cuda_unusable import RULE as CUDA_UNUSABLE
from torchdoctor.rules.env.cuda_visible_devices_hides_gpus import RULE as VISIBLE_DEVICES
from torchdoctor.rules.env.driver_too_old_for_cuda_runtime import RULE as DRIVER_TOO_OLD
from torchdoctor.rules.env.gpu_arch_not_in_wheel import RULE as ARCH_NOT_IN_WHEEL

INDEX = "https://download.pytorch.org/whl"


def cpu_wheel(facts: EnvFacts) -> Iterator[Finding]:
    torch, gpus = facts.torch, facts.nvidia.gpus
    if not torch.importable or torch.cuda or torch.hip or not gpus:
        return
    yield CPU_WHEEL.finding(
        fields={"version": torch.version, "gpu_count": len(gpus),
                "names": ", ".join(sorted({g.name or "?" for g in gpus})), "remedy": _install_hint(facts)},
        evidence={"driver": facts.nvidia.driver, "driver_cuda": facts.nvidia.driver_cuda},
    )


def _install_hint(facts: EnvFacts) -> str:
    """The install command for the newest CUDA build of this release the driver can run."""
    base = versions.public(facts.torch.version or "")
    driver = versions.numbers(facts.nvidia.driver_cuda)
    fitting = [r for r in facts.torch.cuda_releases if not driver or versions.numbers(r) <= driver]
    if fitting:
        tag = "cu" + fitting[-1].replace(".", "")
        return f"Reinstall a CUDA build: `pip install --force-reinstall torch=={base} --index-url {INDEX}/{tag}`."
    cuda = f" (the driver supports CUDA {facts.nvidia.driver_cuda})" if facts.nvidia.driver_cuda else ""
    return f"Reinstall torch from a CUDA index{cuda}: pick the command at https://pytorch.org/get-started/locally/."


def driver_too_old(facts: EnvFacts) -> Iterator[Finding]:
    torch, nvidia = facts.torch, facts.nvidia
    built, supported = versions.numbers(torch.cuda), versions.numbers(nvidia.driver_cuda)
    if not built or not supported or len(built) < 2 or len(supported) < 2 or supported[:2] >= built[:2]:
        return
    fields = dict(driver=nvidia.driver, driver_cuda=nvidia.driver_cuda, version=torch.version, cuda=torch.cuda)
    if supported[0] < built[0]:
        fix = (f"Upgrade the NVIDIA driver to one that supports CUDA {torch.cuda} or newer, or install a torch "
               f"build for CUDA {nvidia.driver_cuda} or older. {_install_hint(facts)}")
        yield DRIVER_TOO_OLD.finding(fields={"remedy": fix, **fields}, evidence=fields)
        return
    yield DRIVER_TOO_OLD.finding(severity=Severity.INFO, variant="minor-version", fields=fields, evidence=fields)


def driver_major_too_old(facts: EnvFacts) -> bool:
    built, supported = versions.numbers(facts.torch.cuda), versions.numbers(facts.nvidia.driver_cuda)
    return bool(built and supported and supported[0] < built[0])


def arch_supported(arch_list: list[str], capability: str) -> bool:
    """NVIDIA's rule: SASS `sm_XY` runs on X.Z for Z >= Y (not `sm_XYa`); PTX `compute_XY` on >= X.Y."""
    major, minor = versions.numbers(capability)[:2]
    for arch in arch_list:
        match = re.fullmatch(r"(sm|compute)_(\d+)(\d)([af]?)", arch)
        if match is None:
            continue
        kind, code_major, code_minor, suffix = match.group(1), int(match.group(2)), int(match.group(3)), match.group(4)
        if kind == "compute" and (major, minor) >= (code_major, code_minor):
            return True
        if kind == "sm" and major == code_major and (minor == code_minor if suffix == "a" else minor >= code_minor):
            return True
    return False


def arch_not_in_wheel(facts: EnvFacts) -> Iterator[Finding]:
    torch = facts.torch
    if not torch.cuda or not torch.arch_list:
        return
    for gpu in torch.gpus or facts.nvidia.gpus:
        if gpu.capability is None:
            continue
        supported = gpu.supported if gpu.supported is not None else arch_supported(torch.arch_list, gpu.capability)
        if supported:
            continue
        yield ARCH_NOT_IN_WHEEL.finding(
            fields={"index": gpu.index, "name": gpu.name, "capability": gpu.capability, "version": torch.version,
                    "archs": " ".join(torch.arch_list), "remedy": _arch_hint(facts, gpu)},
            evidence={"capability": gpu.capability, "arch_list": torch.arch_list},
        )


def _arch_hint(facts: EnvFacts, gpu: Gpu) -> str:
    newer = [r for r in facts.torch.cuda_releases if versions.numbers(r) > versions.numbers(facts.torch.cuda)]
    if newer:
        return (f"Install a build that includes compute capability {gpu.capability}, e.g. the CUDA {newer[-1]} build: "
                f"`pip install --force-reinstall torch=={versions.public(facts.torch.version or '')} "
                f"--index-url {INDEX}/cu{newer[-1].replace('.', '')}` (check its arch list with `torch.cuda.get_arch_list()`).")
    return (f"Install a torch release whose CUDA build lists sm_{gpu.capability.replace('.', '') if gpu.capability else ''} "
            "in `torch.cuda.get_arch_list()` (newer GPUs need newer CUDA builds; see https://pytorch.org/get-started/locally/).")


def visible_ordinals(value: str) -> list[int] | list[str]:
    """CUDA_VISIBLE_DEVICES as CUDA and torch parse it (torch.cuda._parse_visible_devices)."""
    if value.startswith(("GPU-", "MIG-")):
        prefix = value[:4]
        ids: list[str] = []
        for element in value.split(","):
            if element in ids:
                return []
            if not element.startswith(prefix):
                break
            ids.append(element)
        return ids
    ordinals: list[int] = []
    for element in value.split(","):
        match = re.match(r"[+-]?\d+", element.strip())
        ordinal = int(match.group(0)) if match else -1
        if ordinal in ordinals:
            return []
        if ordinal < 0:
            break
        ordinals.append(ordinal)
    return ordinals


def visible_devices(facts: EnvFacts) -> Iterator[Finding]:
    value = facts.variables.get("CUDA_VISIBLE_DEVICES")
    gpus = facts.nvidia.gpus
    if value is None or not gpus:
        return
    ordinals = visible_ordinals(value)
    fix = f"Set CUDA_VISIBLE_DEVICES to indices between 0 and {len(gpus) - 1} (comma-separated, no repeats), or unset it to use every GPU."
    if not ordinals:
        problem = ("repeats a device, so CUDA hides every GPU" if _has_repeat(value)
                   else f"hides all {len(gpus)} GPU(s): torch sees none")
        yield VISIBLE_DEVICES.finding(fields={"value": value, "problem": problem, "remedy": fix})
        return
    numbers = [o for o in ordinals if isinstance(o, int)]
    if len(numbers) == len(ordinals):
        beyond = [o for o in numbers if o >= len(gpus)]
        if beyond:
            kept = numbers[: numbers.index(beyond[0])]
            problem = (f"names GPU {beyond[0]}, but the machine has {len(gpus)} (0-{len(gpus) - 1}): CUDA drops it and "
                       f"every entry after it, so torch sees {len(kept)} GPU(s)")
            yield VISIBLE_DEVICES.finding(fields={"value": value, "problem": problem, "remedy": fix})
            return
    listed = [e for e in value.split(",") if e.strip()]
    if len(ordinals) < len(listed):
        problem = f"stops at entry {len(ordinals) + 1} ({listed[len(ordinals)].strip()!r}): torch sees only {len(ordinals)} of the {len(listed)} listed GPU(s)"
        yield VISIBLE_DEVICES.finding(fields={"value": value, "problem": problem, "remedy": fix})


def hides_every_gpu(facts: EnvFacts) -> bool:
    value = facts.variables.get("CUDA_VISIBLE_DEVICES")
    return value is not None and not visible_ordinals(value)


def _has_repeat(value: str) -> bool:
    items = [v.strip() for v in value.split(",") if v.strip()]
    return len(items) != len(set(items))


def cuda_unusable(facts: EnvFacts) -> Iterator[Finding]:
    torch, gpus = facts.torch, facts.nvidia.gpus
    if not torch.cuda or torch.cuda_available is not False or not gpus:
        return
    if driver_major_too_old(facts) or hides_every_gpu(facts):
        return
    reason = torch.cuda_error or "torch.cuda.is_available() is False"
    yield CUDA_UNUSABLE.finding(fields={"version": torch.version, "gpu_count": len(gpus), "reason": reason},
                                evidence={"error": reason})
