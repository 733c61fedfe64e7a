"""`torchdoctor run [OPTIONS] SCRIPT [ARGS...]` / `torchdoctor run [OPTIONS] -m MODULE [ARGS...]`.

Runs the script exactly as `python SCRIPT ARGS...` would, observes it (and its child
processes) through PyTorch's own hooks, and reports what went wrong at the script's own
lines. The report goes to stderr (stdout belongs to the script); `--output FILE` writes it to a
file of its own too (see renderers/outputs.py), apart from the script's output.
The exit status is 1 when findings reach `--fail-on`, otherwise the script's own.

No torch is imported in this process.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from torchdoctor.core import plugins, registry
from torchdoctor.core.config import Config
from torchdoctor.core.errors import UsageError
from torchdoctor.core.progress import on_a_terminal
from torchdoctor.core.report import Report
from torchdoctor.observe import self_cost
from torchdoctor.renderers import tensorboard
from torchdoctor.run import launcher, ranks, summary
from torchdoctor.run.nodes.exchange import Exchange
from torchdoctor.run.nodes.view import on_nodes, read_folder
from torchdoctor.run.records import CONFIG_FILE, RunRecords

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
        "--tensorboard", metavar="DIR", type=Path,
        help="also write the per-step series (loss, lr, gradient norms, step time) as TensorBoard scalars "
        "and the findings as text to DIR, when the run ends (needs `torchdoctor[tensorboard]`)",
    )
    parser.add_argument(
        "--shared-dir", type=Path, metavar="DIR",
        help="a job on several nodes: exchange the nodes' records through this folder on a file system every node "
        "shares, instead of the job's own store (see docs/run-distributed.md)",
    )
    parser.add_argument(
        "--memory", action="store_true",
        help="print the memory account at the end: live tensor storages by owner, peaks per phase (always in the JSON report)",
    )
    parser.add_argument(
        "--memory-limit", metavar="SIZE", type=memory_size,
        help="cap each process's memory (RLIMIT_DATA), e.g. 2GiB: a script that needs more runs out, and is explained",
    )
    parser.add_argument(
        "--profile-self", action="store_true",
        help="time torchdoctor's own detectors and event handlers in the observed processes and print what each "
        "costs (CPU time per call, during the warm-up and after it); also in the JSON report's `self_cost`",
    )
    parser.add_argument(
        "--save-bad-batches", metavar="DIR", type=Path,
        help="when the loss spikes (TD496), write the batch behind it, its sample indices and the weights that produced "
        "the loss to DIR, to reproduce the step (at most 4 files per process, 256 MiB each)",
    )
    parser.add_argument(
        "--stall-timeout", metavar="SECONDS", type=stall_timeout,
        help="report a stall (TD497) with where every thread waits when no step or batch comes for this long and for "
        "50 times the median step time (default 60; 0 turns the watchdog off)",
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


def stall_timeout(text: str) -> float:
    """`--stall-timeout`: seconds, 0 or more."""
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not seconds >= 0:
        raise argparse.ArgumentTypeError(f"the stall timeout must be 0 (off) or more seconds, not {text!r}")
    return seconds


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
    plugins.check_plugins("torchdoctor.run", "torchdoctor.crash")
    if args.tensorboard is not None:
        tensorboard.available()
    if on_a_terminal():  # the script owns the terminal while it runs: one line now, the report at the end
        print(f"torchdoctor: observing {target.display()}; the report follows when it ends", file=sys.stderr, flush=True)
    limit = getattr(args, "memory_limit", None)
    profile = bool(getattr(args, "profile_self", False))
    settings = {**({"memory_limit": limit} if limit else {}), **({self_cost.CONFIG_KEY: True} if profile else {})}
    bad_batches = getattr(args, "save_bad_batches", None)
    if bad_batches is not None:
        settings["save_bad_batches"] = str(bad_batches.resolve())
    if getattr(args, "stall_timeout", None) is not None:
        settings["stall_timeout"] = args.stall_timeout
    report, node = observe(target, config, partial(_build, target, profile), settings or None,
                           shared_dir=_shared_dir(getattr(args, "shared_dir", None)))
    if node is not None:  # another node than rank 0's: its report goes beside the merged one
        args.outputs = [output.beside(node) for output in getattr(args, "outputs", [])]
    if getattr(args, "memory", False):
        report.appendix.extend(memory_tables(report))
    if profile:
        report.appendix.append(self_cost.table(report.sections["self_cost"], int(report.meta.get("steps", 0))))
    if args.tensorboard is not None:
        tensorboard.write(report, args.tensorboard)
    return report


def _build(target: launcher.Target, profile: bool, finished: launcher.Finished, records: RunRecords) -> Report:
    report = summary.build(target, finished, records)
    if profile:  # `--profile-self`: what each detector cost, summed over the processes (observe/self_cost.py)
        report.sections["self_cost"] = self_cost.merged(records.processes)
    return report


def observe(
    target: launcher.Target,
    config: Config,
    build: Callable[[launcher.Finished, RunRecords], Report],
    settings: dict[str, Any] | None = None,
    shared_dir: Path | None = None,
) -> tuple[Report, Any]:
    """Run the target observed, to its end, read what its processes wrote and `build` the report
    from it. `settings` go into the run folder's config with the enabled rules (`trace` adds its
    tracer this way). Also returns, on a node other than rank 0's in a multi-node job, where its
    own report goes (run/nodes/view.py); None otherwise."""
    folder = Path(tempfile.mkdtemp(prefix="torchdoctor-run-"))
    try:
        enabled = [rule.code for rule in registry.all_rules() if config.enabled(rule)]
        extra = {**(settings or {}), **({"shared_dir": str(shared_dir)} if shared_dir else {})}
        (folder / CONFIG_FILE).write_text(json.dumps({"enabled": enabled, **extra}), encoding="utf-8")
        exchange = Exchange(folder, shared_dir)
        watch = ranks.HangWatch(folder)

        def monitor() -> ranks.Deadlock | None:
            exchange.poll()
            return watch.check()

        finished = launcher.run(target, folder, monitor=monitor)
        exchange.end(finished)
        records = read_folder(folder)
        records.findings = ranks.job_findings(folder, records.findings, records.shared, finished.stopped)
        report = build(finished, records)
        node = on_nodes(report, folder, exchange.problem)
    finally:
        if not os.environ.get(ENV_KEEP):
            shutil.rmtree(folder, ignore_errors=True)
    return report, node


def _shared_dir(path: Path | None) -> Path | None:
    if path is None:
        return None
    if not path.is_dir():
        raise UsageError(f"--shared-dir {str(path)!r}: no such folder (it must exist, on a file system every node shares)")
    return path.resolve()


def memory_tables(report: Report) -> list[str]:
    """`--memory`: the per-owner table of each observed process that trained."""
    from torchdoctor.observe.memory.table import render

    processes = report.sections.get("memory", {}).get("processes", [])
    shown = [p for p in processes if p.get("censuses")] or processes[:1]
    if not shown:
        return ["memory: no process imported torch, so there is no account"]
    return ["\n".join(render(process)) for process in shown]
