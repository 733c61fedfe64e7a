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


def cpu_wheel(facts: EnvFacts) -> Iterator[Finding]:
    torch, gpus = facts.torch, facts.nvidia.gpus
    if not torch.importable or torch.cuda or torch.hip or not gpus:
        return
    variant, install = _install(facts)
    yield CPU_WHEEL.finding(
        variant=variant,
        fields={"version": torch.version, "gpu_count": len(gpus),
                "names": ", ".join(sorted({g.name or "?" for g in gpus})), **install},
        evidence={"driver": facts.nvidia.driver, "driver_cuda": facts.nvidia.driver_cuda},
    )


def _install(facts: EnvFacts) -> tuple[str | None, dict[str, object]]:
    """The newest CUDA build of this release the driver can run, as the fields of the rules'
    install hint (`base`, and `tag`, the index's folder); else the variant that says there is none."""
    base = versions.public(facts.torch.version or "")
    driver = versions.numbers(facts.nvidia.driver_cuda)
    fitting = [r for r in facts.torch.cuda_releases if not driver or versions.numbers(r) <= driver]
    if fitting:
        return None, {"base": base, "tag": "cu" + fitting[-1].replace(".", "")}
    if facts.nvidia.driver_cuda:
        return "no-fitting-build", {"driver_cuda": facts.nvidia.driver_cuda}
    return "no-fitting-build-unknown-driver", {}


def driver_too_old(facts: EnvFacts) -> Iterator[Finding]:
    torch, nvidia = facts.torch, facts.nvidia
    built, supported = versions.numbers(torch.cuda), versions.numbers(nvidia.driver_cuda)
    if not built or not supported or len(built) < 2 or len(supported) < 2 or supported[:2] >= built[:2]:
        return
    fields = dict(driver=nvidia.driver, driver_cuda=nvidia.driver_cuda, version=torch.version, cuda=torch.cuda)
    if supported[0] < built[0]:
        variant, install = _install(facts)  # the driver's CUDA is known here: never the unknown-driver variant
        install.pop("driver_cuda", None)
        yield DRIVER_TOO_OLD.finding(variant=variant, fields={**fields, **install}, evidence=fields)
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
        variant, install = _arch_install(facts, gpu)
        yield ARCH_NOT_IN_WHEEL.finding(
            variant=variant,
            fields={"index": gpu.index, "name": gpu.name, "capability": gpu.capability, "version": torch.version,
                    "archs": " ".join(torch.arch_list), **install},
            evidence={"capability": gpu.capability, "arch_list": torch.arch_list},
        )


def _arch_install(facts: EnvFacts, gpu: Gpu) -> tuple[str | None, dict[str, object]]:
    """The newest CUDA build of this release, as the fields of the rule's hint; else its variant
    for none newer."""
    newer = [r for r in facts.torch.cuda_releases if versions.numbers(r) > versions.numbers(facts.torch.cuda)]
    if newer:
        return None, {"newer": newer[-1], "base": versions.public(facts.torch.version or ""),
                      "tag": "cu" + newer[-1].replace(".", "")}
    return "no-newer-build", {"sm": gpu.capability.replace(".", "") if gpu.capability else ""}


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
    last = len(gpus) - 1
    if not ordinals:
        if _has_repeat(value):
            yield VISIBLE_DEVICES.finding(variant="repeats", fields={"value": value, "last": last})
        else:
            yield VISIBLE_DEVICES.finding(fields={"value": value, "gpu_count": len(gpus), "last": last})
        return
    numbers = [o for o in ordinals if isinstance(o, int)]
    if len(numbers) == len(ordinals):
        beyond = [o for o in numbers if o >= len(gpus)]
        if beyond:
            kept = numbers[: numbers.index(beyond[0])]
            yield VISIBLE_DEVICES.finding(variant="beyond", fields={"value": value, "beyond": beyond[0], "gpu_count": len(gpus),
                                                                    "last": last, "kept": len(kept)})
            return
    listed = [e for e in value.split(",") if e.strip()]
    if len(ordinals) < len(listed):
        yield VISIBLE_DEVICES.finding(variant="stops", fields={"value": value, "entry": len(ordinals) + 1,
                                                               "item": listed[len(ordinals)].strip(), "seen": len(ordinals),
                                                               "listed": len(listed), "last": last})


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
    fields = {"version": torch.version, "gpu_count": len(gpus)}
    if torch.cuda_error:
        yield CUDA_UNUSABLE.finding(fields={**fields, "reason": torch.cuda_error}, evidence={"error": torch.cuda_error})
    else:
        yield CUDA_UNUSABLE.finding(variant="no-error", fields=fields, evidence={"error": "torch.cuda.is_available() is False"})
