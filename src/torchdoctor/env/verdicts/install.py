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
        fix = f"Install torch for this interpreter ({facts.platform.executable or 'python'} -m pip install torch)."
    elif "undefined symbol" in error or "cannot open shared object" in error:
        fix = ("A shared library torch needs is missing or another copy shadows it: check LD_LIBRARY_PATH and "
               "LD_PRELOAD, then reinstall torch in a clean environment (`pip install --force-reinstall torch`).")
    elif "NumPy" in error or "numpy" in error:
        fix = "Install a NumPy this torch was built for (`pip install 'numpy<2'` for torch older than 2.3), or upgrade torch."
    else:
        fix = "Reinstall torch for this Python and platform (`pip install --force-reinstall torch`); the error above says which part is broken."
    yield IMPORT_FAILS.finding(fields={"error": error, "remedy": fix}, evidence={"error": error})


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
                        "problem": f"was built for torch=={pinned}", "version": installed},
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
                fields={"package": package, "package_version": version, "problem": f"is a {other} build",
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
        abi_note = "" if abi is None else f" (this torch uses _GLIBCXX_USE_CXX11_ABI={int(abi)})"
        fix = (f"Reinstall {package} built for torch {facts.torch.version or ''}{abi_note}: "
               f"`pip install --force-reinstall --no-cache-dir --no-build-isolation {package}` builds it "
               "against the installed torch; a prebuilt wheel must name the same torch, CUDA and ABI.")
        yield EXTENSION_BINARY.finding(fields={"package": package, "error": result.error, "remedy": fix},
                                       evidence={"module": result.module})
