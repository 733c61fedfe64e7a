"""`torchdoctor run [OPTIONS] SCRIPT [ARGS...]` / `torchdoctor run [OPTIONS] -m MODULE [ARGS...]`.

Runs the script exactly as `python SCRIPT ARGS...` would, observes it (and its child
processes) through PyTorch's own hooks, and reports what went wrong at the script's own
lines. The report goes to stderr (stdout belongs to the script); `--output FILE` writes it to a
file of its own too (see report/outputs.py), apart from the script's output.
The exit status is 1 when findings reach `--fail-on`, otherwise the script's own.

No torch is imported in this process.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import tempfile
from pathlib import Path

from torchdoctor.core import registry
from torchdoctor.core.config import Config
from torchdoctor.core.errors import UsageError
from torchdoctor.core.report import Report
from torchdoctor.run import launcher, ranks, summary
from torchdoctor.run.records import CONFIG_FILE, read_folder

HELP = "run a training script as `python SCRIPT ARGS...` would, watch it, and report what went wrong"
USAGE = "torchdoctor run [OPTIONS] SCRIPT [ARGS...]\n       torchdoctor run [OPTIONS] -m MODULE [ARGS...]"
#: keep the per-process record files (for debugging torchdoctor itself)
ENV_KEEP = "TORCHDOCTOR_KEEP_RUN_DIR"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.usage = USAGE
    parser.epilog = (
        "Everything after SCRIPT (or after -m MODULE) is passed to the script unchanged. "
        "Examples: torchdoctor run train.py --epochs 1; "
        "torchdoctor run --output report.json -m torch.distributed.run --nproc-per-node 2 train.py"
    )
    parser.add_argument(
        "-m", dest="module", nargs=argparse.REMAINDER, metavar="MODULE",
        help="run a module as `python -m MODULE ARGS...` would (e.g. -m torch.distributed.run)",
    )
    parser.add_argument(
        "--memory", action="store_true",
        help="print the memory account at the end: live tensor storages by owner, peaks per phase (always in the JSON report)",
    )
    parser.add_argument(
        "--memory-limit", metavar="SIZE", type=memory_size,
        help="cap each process's memory (RLIMIT_DATA), e.g. 2GiB: a script that needs more runs out, and is explained",
    )
    parser.add_argument("script", nargs="?", metavar="SCRIPT", help="the Python script to run")
    parser.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS", help="arguments for the script")


_UNITS = {"": 1, "b": 1, "k": 2**10, "kb": 10**3, "kib": 2**10, "m": 2**20, "mb": 10**6, "mib": 2**20,
          "g": 2**30, "gb": 10**9, "gib": 2**30, "t": 2**40, "tb": 10**12, "tib": 2**40}


def memory_size(text: str) -> int:
    """`2GiB`, `512MiB`, `1.5G`, `3000000000` -> bytes."""
    match = re.fullmatch(r"\s*([\d.]+)\s*([a-zA-Z]*)\s*", text)
    unit = match.group(2).lower() if match else ""
    if match is None or unit not in _UNITS:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (write e.g. 2GiB or 512MiB)")
    try:
        size = int(float(match.group(1)) * _UNITS[unit])
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (write e.g. 2GiB or 512MiB)") from None
    if size <= 0:
        raise argparse.ArgumentTypeError(f"the memory limit must be positive, not {text!r}")
    return size


def target_from(args: argparse.Namespace) -> launcher.Target:
    if args.module is not None:
        if not args.module:
            raise UsageError("-m needs a module name: torchdoctor run -m MODULE [ARGS...]")
        return launcher.Target(script=None, module=args.module[0], args=tuple(args.module[1:]))
    if not args.script:
        raise UsageError("nothing to run: torchdoctor run [OPTIONS] SCRIPT [ARGS...] or -m MODULE [ARGS...]")
    return launcher.Target(script=args.script, module=None, args=tuple(args.args))


def execute(args: argparse.Namespace, config: Config) -> Report:
    target = target_from(args)
    target.check()
    folder = Path(tempfile.mkdtemp(prefix="torchdoctor-run-"))
    try:
        enabled = [rule.code for rule in registry.all_rules() if config.enabled(rule)]
        settings: dict[str, object] = {"enabled": enabled}
        if getattr(args, "memory_limit", None):
            settings["memory_limit"] = args.memory_limit
        (folder / CONFIG_FILE).write_text(json.dumps(settings), encoding="utf-8")
        finished = launcher.run(target, folder, monitor=ranks.HangWatch(folder).check)
        records = read_folder(folder)
        records.findings = ranks.job_findings(folder, records.findings, records.shared, finished.stopped)
        report = summary.build(target, finished, records)
        if getattr(args, "memory", False):
            report.appendix.extend(memory_tables(report))
    finally:
        if not os.environ.get(ENV_KEEP):
            shutil.rmtree(folder, ignore_errors=True)
    return report


def memory_tables(report: Report) -> list[str]:
    """`--memory`: the per-owner table of each observed process that trained."""
    from torchdoctor.run.memory.table import render

    processes = report.sections.get("memory", {}).get("processes", [])
    shown = [p for p in processes if p.get("censuses")] or processes[:1]
    if not shown:
        return ["memory: no process imported torch, so there is no account"]
    return ["\n".join(render(process)) for process in shown]
