"""Version strings as torch writes them: `2.5.1+cu121`, CUDA `12.4`, cuDNN `90100`."""

from __future__ import annotations

import re

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version


def public(version: str) -> str:
    """`2.5.1+cu121` -> `2.5.1`."""
    return version.split("+", 1)[0]


def local(version: str) -> str | None:
    """`2.5.1+cu121` -> `cu121`; None for versions without a local build tag."""
    return version.split("+", 1)[1] if "+" in version else None


def numbers(version: str | None) -> tuple[int, ...]:
    """Leading numeric parts: `12.4.1` -> (12, 4, 1), `2.6.0a0+git` -> (2, 6, 0)."""
    if not version:
        return ()
    match = re.match(r"\d+(?:\.\d+)*", version.strip())
    return tuple(int(part) for part in match.group(0).split(".")) if match else ()


def matches_pin(installed: str, pinned: str) -> bool:
    """Does `installed` satisfy `==pinned` (PEP 440, through packaging: `.*` wildcards; local build
    tags such as `+cu121` ignored on both sides, the build is compared apart)? A version PEP 440
    cannot read is not called a mismatch."""
    try:
        return SpecifierSet(f"=={public(pinned.strip())}").contains(Version(installed), prereleases=True)
    except (InvalidSpecifier, InvalidVersion):
        return True


def cudnn(version: int | None) -> str | None:
    """cuDNN's integer version as text: 90100 -> 9.1.0 (8xxx before cuDNN 9: 8902 -> 8.9.2)."""
    if version is None:
        return None
    if version >= 10000:
        return f"{version // 10000}.{version // 100 % 100}.{version % 100}"
    return f"{version // 1000}.{version // 100 % 10}.{version % 100}"
