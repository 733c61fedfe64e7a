"""Probes: collect the facts, and nothing else (verdicts live in `torchdoctor.env.verdicts`).

`collect(host)` asks the machine through `host`, so tests can replace any part of it.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from torchdoctor.env.facts import EnvFacts, ImportResult, PackageFacts, TorchFacts, from_dict
from torchdoctor.env.probes import build, nvidia, packages, system
from torchdoctor.env.redact import redact_text
from torchdoctor.env.runner import Host

TORCH_PROBE_TIMEOUT = 90.0


def collect(host: Host | None = None, *, imports: bool = True) -> EnvFacts:
    """Every fact `torchdoctor env` reports. `imports=False` skips importing extension packages."""
    host = host or Host()
    build_facts = build.build_facts(host)
    dependents = packages.dependents()
    candidates = [(module, name) for name, _, modules in dependents for module in modules][: packages.MAX_EXTENSIONS]
    torch_facts, gcc_range, results = probe_torch(host, build_facts.nvcc_version, candidates if imports else [])
    return EnvFacts(
        platform=system.platform_facts(),
        torch=torch_facts,
        packages=PackageFacts(
            torch_installs=packages.torch_installs(),
            versions=packages.family_versions(),
            torch_pins={name: spec for name, spec, _ in dependents if spec},
            imports=results,
        ),
        nvidia=nvidia.nvidia_facts(host),
        build=from_dict(type(build_facts), {**build_facts.__dict__, "gcc_range": gcc_range}),
        limits=system.limit_facts(host),
        variables=system.relevant_variables(host.environ),
    )


def probe_torch(
    host: Host, toolkit: str | None, candidates: list[tuple[str, str]]
) -> tuple[TorchFacts, list[str], list[ImportResult]]:
    """Import torch (and the extension modules) in a fresh interpreter and read what it printed."""
    argv = [sys.executable, "-m", "torchdoctor.env.probes.torch_probe"]
    if toolkit:
        argv.append(f"--toolkit={toolkit}")
    argv += [f"{module}={package}" for module, package in candidates]
    done = host.run(argv, TORCH_PROBE_TIMEOUT)
    lines = parse_lines(done.stdout if done else "")
    torch_data = next((line["torch"] for line in lines if "torch" in line), None)
    if torch_data is None:
        return TorchFacts(importable=False, import_error=_probe_failure(done)), [], []
    gcc_range: list[str] = next((line["gcc_range"]["range"] for line in lines if "gcc_range" in line), [])
    results = [from_dict(ImportResult, line["import"]) for line in lines if "import" in line]
    if done is not None and done.timed_out and len(results) < len(candidates):
        module, package = candidates[len(results)]
        results.append(ImportResult(module=module, package=package, ok=False,
                                    error=f"import did not finish within {TORCH_PROBE_TIMEOUT:.0f} s"))
    facts = from_dict(TorchFacts, torch_data)
    return facts, gcc_range, results


def parse_lines(text: str) -> list[dict[str, Any]]:
    out = []
    for line in text.splitlines():
        try:
            value = json.loads(redact_text(line))
        except ValueError:
            continue
        if isinstance(value, dict):
            out.append(value)
    return out


def _probe_failure(done: Any) -> str:
    """Why the probe printed nothing: the interpreter crashed, hung, or could not start."""
    if done is None:
        return f"could not start {sys.executable}"
    if done.timed_out:
        return f"`import torch` did not finish within {TORCH_PROBE_TIMEOUT:.0f} s"
    tail = [line for line in (done.stderr or "").splitlines() if line.strip()]
    status = f"exit status {done.returncode}" if done.returncode >= 0 else f"signal {-done.returncode}"
    return redact_text(tail[-1].strip() if tail else f"the interpreter died ({status})")[:500]
