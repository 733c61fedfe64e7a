"""`torchdoctor env`: the facts `torch.utils.collect_env` prints, each one judged.

Probes collect facts (`torchdoctor.env.probes`), verdicts turn them into findings
(`torchdoctor.env.verdicts`); this module only wires them to the report. torch is imported in a
child interpreter, never here.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from torchdoctor.core.config import Config
from torchdoctor.core.errors import UsageError
from torchdoctor.core.report import Report

if TYPE_CHECKING:
    from torchdoctor.env.facts import EnvFacts

HELP = "check the installation: torch, CUDA, driver, GPUs, extensions, compilers, system limits"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--no-imports", dest="imports", action="store_false",
        help="do not import installed torch extensions to check that they load",
    )
    parser.add_argument(
        "--facts", type=Path, metavar="JSON",
        help="judge these facts (the \"environment\" object of a JSON report, e.g. from another machine) instead of probing this one",
    )


def execute(args: argparse.Namespace, config: Config) -> Report:
    from torchdoctor.env.summary import checks
    from torchdoctor.env.verdicts import RULES, judge_by_group

    facts = _load(args.facts) if args.facts is not None else _probe(args.imports)
    by_group = judge_by_group(facts)
    report = Report(command="env")
    report.findings = [finding for found in by_group.values() for finding in found]
    report.checks = checks(facts, by_group, RULES)
    report.title = "torchdoctor env" + (f" (facts from {args.facts})" if args.facts else "")
    if not facts.nvidia.gpus and not facts.torch.gpus:
        report.notices.append("no NVIDIA GPU on this machine: the GPU, driver and CUDA library checks had nothing to check")
    report.sections["environment"] = facts.to_dict()
    return report


def _probe(imports: bool) -> EnvFacts:
    from torchdoctor.env.probes import collect

    return collect(imports=imports)


def _load(path: Path) -> EnvFacts:
    from torchdoctor.env.facts import EnvFacts, from_dict
    from torchdoctor.env.redact import redact_variables

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"--facts {str(path)!r}: {exc.strerror}") from None
    except ValueError as exc:
        raise UsageError(f"--facts {str(path)!r}: not JSON ({exc})") from None
    if isinstance(data, dict) and isinstance(data.get("environment"), dict):
        data = data["environment"]
    try:
        facts = from_dict(EnvFacts, data)
    except (ValueError, TypeError) as exc:
        raise UsageError(f"--facts {str(path)!r}: {exc}") from None
    return type(facts)(**{**facts.__dict__, "variables": redact_variables(facts.variables)})
