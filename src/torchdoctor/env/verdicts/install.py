"""Verdicts on the installation: torch itself, the packages built against it, NumPy."""

from __future__ import annotations

from collections.abc import Iterator

from torchdoctor.core.finding import Finding
from torchdoctor.env import versions
from torchdoctor.env.facts import EnvFacts
from torchdoctor.rules.env.extension_binary_mismatch import RULE as EXTENSION_BINARY
from torchdoctor.rules.env.multiple_torch_installs import RULE as MULTIPLE_INSTALLS
from torchdoctor.rules.env.numpy_abi_mismatch import RULE as NUMPY_ABI
from torchdoctor.rules.env.torch_import_fails import RULE as IMPORT_FAILS
from torchdoctor.rules.env.torch_package_version_skew import RULE as VERSION_SKEW

#: error texts of a binary that does not fit the torch (or libraries) it is loaded with
BINARY_ERRORS = ("undefined symbol", "cannot open shared object", "DLL load failed", "Symbol not found",
                 "version `GLIBC", "wrong ELF class")
LOCAL_TAGGED = ("torchvision", "torchaudio")


def is_binary_error(error: str) -> bool:
    """An error of compiled code that does not fit torch ("operator torchvision::nms does not exist")."""
    return any(marker in error for marker in BINARY_ERRORS) or ("operator" in error and "does not exist" in error)


def import_fails(facts: EnvFacts) -> Iterator[Finding]:
    torch = facts.torch
    if torch.importable is not False:
        return
    error = torch.import_error or "unknown error"
    if "No module named 'torch'" in error:
        yield IMPORT_FAILS.finding(variant="not-installed", fields={"error": error, "python": facts.platform.executable or "python"},
                                   evidence={"error": error})
        return
    if "undefined symbol" in error or "cannot open shared object" in error:
        variant: str | None = "shared-library"
    elif "NumPy" in error or "numpy" in error:
        variant = "numpy"
    else:
        variant = None
    yield IMPORT_FAILS.finding(variant=variant, fields={"error": error}, evidence={"error": error})


def version_skew(facts: EnvFacts) -> Iterator[Finding]:
    installed = facts.torch.version or _imported_version(facts)
    if not installed:
        return
    tag = versions.local(installed)
    for package, spec in sorted(facts.packages.torch_pins.items()):
        pinned = spec.strip()
        if not pinned.startswith("==") or pinned.startswith("==="):
            continue
        pinned = pinned[2:].split(",")[0].strip()
        if not versions.matches_pin(installed, pinned):
            yield VERSION_SKEW.finding(
                fields={"package": package, "package_version": facts.packages.versions.get(package.lower(), ""),
                        "pinned": pinned, "version": installed},
                evidence={"package": package, "requires": f"torch=={pinned}", "torch": installed},
            )
    for package in LOCAL_TAGGED:
        version = facts.packages.versions.get(package)
        if version is None or (facts.packages.torch_pins.get(package, "").startswith("==")
                               and not versions.matches_pin(installed, facts.packages.torch_pins[package][2:])):
            continue
        other = versions.local(version)
        if tag and other and other != tag:
            yield VERSION_SKEW.finding(
                variant="other-build", fields={"package": package, "package_version": version, "build": other,
                                               "version": installed}, evidence={"package": package, "build": other, "torch_build": tag},
            )


def _imported_version(facts: EnvFacts) -> str | None:
    installs = facts.packages.torch_installs
    return installs[0].version if installs else None


def multiple_installs(facts: EnvFacts) -> Iterator[Finding]:
    installs = facts.packages.torch_installs
    if len(installs) < 2:
        return
    def describe(install):  # noqa: ANN001, ANN202 - tiny local formatter
        return f"{install.path} ({install.version or 'unknown version'})"
    yield MULTIPLE_INSTALLS.finding(
        fields={"installs": len(installs), "first": describe(installs[0]),
                "others": ", ".join(describe(i) for i in installs[1:])},
        evidence={"installs": [i.path for i in installs]},
    )


def numpy_mismatch(facts: EnvFacts) -> Iterator[Finding]:
    numpy = facts.packages.versions.get("numpy", "2")
    if facts.torch.numpy_error:
        yield NUMPY_ABI.finding(fields={"module": "torch", "package": "torch", "numpy": numpy,
                                        "error": facts.torch.numpy_error})
    for result in facts.packages.imports:
        if result.numpy1:
            package = result.package or result.module
            yield NUMPY_ABI.finding(
                fields={"module": result.module, "package": package, "numpy": numpy,
                        "error": result.error or "NumPy printed \"A module that was compiled using NumPy 1.x cannot be run in NumPy 2\""},
            )


def extension_binaries(facts: EnvFacts) -> Iterator[Finding]:
    skewed = {f.evidence["package"].lower() for f in version_skew(facts) if f.evidence}
    for result in facts.packages.imports:
        package = result.package or result.module
        if result.ok or result.numpy1 or package.lower() in skewed or not result.error:
            continue
        if not is_binary_error(result.error):
            continue
        abi = facts.torch.cxx11_abi
        fields = {"package": package, "error": result.error, "version": facts.torch.version or ""}
        yield EXTENSION_BINARY.finding(variant="abi-unknown" if abi is None else None,
                                       fields=fields if abi is None else {**fields, "abi": int(abi)},
                                       evidence={"module": result.module})
