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
import shutil
import tempfile
from pathlib import Path
from typing import Any

from torchdoctor.core import registry
from torchdoctor.core.config import Config
from torchdoctor.core.errors import UsageError
from torchdoctor.core.report import Report
from torchdoctor.run import launcher, ranks, summary
from torchdoctor.run.records import CONFIG_FILE, RunRecords, read_folder

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
    parser.add_argument("script", nargs="?", metavar="SCRIPT", help="the Python script to run")
    parser.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS", help="arguments for the script")


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
    finished, records = observe(target, config)
    return summary.build(target, finished, records)


def observe(target: launcher.Target, config: Config, settings: dict[str, Any] | None = None) -> tuple[launcher.Finished, RunRecords]:
    """Run the target observed, to its end, and read what its processes wrote. `settings` go
    into the run folder's config with the enabled rules (`trace` adds its tracer this way)."""
    folder = Path(tempfile.mkdtemp(prefix="torchdoctor-run-"))
    try:
        enabled = [rule.code for rule in registry.all_rules() if config.enabled(rule)]
        (folder / CONFIG_FILE).write_text(json.dumps({"enabled": enabled, **(settings or {})}), encoding="utf-8")
        finished = launcher.run(target, folder, monitor=ranks.HangWatch(folder).check)
        records = read_folder(folder)
        records.findings = ranks.job_findings(folder, records.findings, records.shared, finished.stopped)
    finally:
        if not os.environ.get(ENV_KEEP):
            shutil.rmtree(folder, ignore_errors=True)
    return finished, records
