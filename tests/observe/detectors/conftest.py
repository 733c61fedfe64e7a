"""Run training code in this process under a session with chosen detectors (fast), or a lab
program with a few steps; the findings are collected by the session's own `report`."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.lab import LAB
from torchdoctor.core.finding import Finding
from torchdoctor.observe.detector import Detector
from torchdoctor.observe.outcome import Outcome
from torchdoctor.observe.session import Session


@dataclass
class Observed:
    """The findings of one observed block (the latest version of each, with its count)."""

    found: dict[str, Finding] = field(default_factory=dict)

    @property
    def findings(self) -> list[Finding]:
        return list(self.found.values())

    @property
    def codes(self) -> set[str]:
        return {f.rule for f in self.found.values()}

    def one(self, code: str) -> Finding:
        matching = [f for f in self.found.values() if f.rule == code]
        assert len(matching) == 1, f"{code}: {matching}"
        return matching[0]


@contextmanager
def observing(*detectors: type[Detector]) -> Iterator[Observed]:
    """Observe the block with only `detectors`; detectors must never fail (no TD006)."""
    observed = Observed()
    session = Session.start(emit=lambda finding, key: observed.found.__setitem__(key, finding), detectors=detectors)
    try:
        yield observed
    finally:
        session.finish(Outcome())
        session.uninstall()
    failures = [f.message for f in observed.findings if f.rule == "TD006"]
    assert not failures, failures


def load_lab(name: str, fixed: bool = False) -> ModuleType:
    """Import a lab program as a module (registered, so `inspect` finds its source)."""
    path = LAB / "fixed" / name if fixed else LAB / name
    module_name = f"lab_{'fixed_' if fixed else ''}{path.stem}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


def run_lab(name: str, detectors: tuple[type[Detector], ...], fixed: bool = False, **train: Any) -> Observed:
    module = load_lab(name, fixed)
    with observing(*detectors) as observed:
        module.train(**train)
    return observed


def line_of(path: Path | str, text: str) -> int:
    """The 1-based line of the first occurrence of `text` in a file."""
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if text in line:
            return number
    raise AssertionError(f"{text!r} not in {path}")


@pytest.fixture(autouse=True)
def _one_thread() -> Iterator[None]:
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


Run = Callable[..., Observed]
