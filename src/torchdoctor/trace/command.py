"""`torchdoctor trace [OPTIONS] SCRIPT [ARGS...]` / `torchdoctor trace --op OP`.

With a script: runs it as `torchdoctor run` does (unchanged, same argv, run's detectors and
crash explanations included), profiles `--steps` training steps after `--skip` of them, and
reports per user line the aten ops it dispatched, their time, and the backward ops they
caused, plus the performance diagnoses those times show. With `--op` alone: one op's whole
path (schema, native_functions.yaml entry, kernels registered in this install).

No torch is imported at import time; `--op` imports it to read the dispatcher.
"""

from __future__ import annotations

import argparse
import os
import sys

from torchdoctor.core.config import Config
from torchdoctor.core.errors import UsageError
from torchdoctor.core.progress import on_a_terminal
from torchdoctor.core.report import Report
from torchdoctor.run import summary as run_summary
from torchdoctor.run.command import observe, target_from
from torchdoctor.run.launcher import Finished
from torchdoctor.run.records import RunRecords
from torchdoctor.trace.options import CONFIG_KEY, TRACER, TraceOptions
from torchdoctor.trace.summary import add_trace

HELP = "run a training script for a few steps and show, per line of yours, the aten ops it ran and their time; or one op's path to its kernels"
USAGE = ("torchdoctor trace [OPTIONS] SCRIPT [ARGS...]\n       torchdoctor trace [OPTIONS] -m MODULE [ARGS...]\n"
         "       torchdoctor trace --op OP")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.usage = USAGE
    parser.epilog = (
        "Everything after SCRIPT (or after -m MODULE) is passed to the script unchanged. Examples: "
        "torchdoctor trace train.py --epochs 1; torchdoctor trace --steps 3 --line train.py:42 train.py; "
        "torchdoctor trace --op aten::add.Tensor"
    )
    group = parser.add_argument_group("trace options")
    group.add_argument("--steps", type=_positive, default=TraceOptions.steps, metavar="N",
                       help=f"training steps to trace (default: {TraceOptions.steps})")
    group.add_argument("--skip", type=_positive, default=TraceOptions.skip, metavar="N",
                       help=f"steps to run before tracing starts, at least 1: the trace starts where a step ends (default: {TraceOptions.skip})")
    group.add_argument("--stop", action="store_true", help="end the script once the traced steps are done (default: it runs on, untraced)")
    group.add_argument("--op", action="append", default=[], metavar="OP",
                       help="show this op's path to its kernels (aten::add.Tensor); with a script, also how the run called it")
    group.add_argument("--line", action="append", default=[], metavar="FILE:N",
                       help="show the path of every op this line of the script called (needs a script)")
    group.add_argument("--chrome-trace", type=str, default=None, metavar="FILE",
                       help="also write the traced steps as a Chrome trace (open it in Perfetto)")
    parser.add_argument("-m", dest="module", nargs=argparse.REMAINDER, metavar="MODULE",
                        help="trace a module as `python -m MODULE ARGS...` would run it")
    parser.add_argument("script", nargs="?", metavar="SCRIPT", help="the Python script to trace")
    parser.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS", help="arguments for the script")


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def execute(args: argparse.Namespace, config: Config) -> Report:
    for line in args.line:
        file, _, number = line.rpartition(":")
        if not file or not number.isdigit():
            raise UsageError(f"--line {line!r}: expected FILE:LINE, e.g. train.py:42")
    if args.module is None and not args.script:
        if args.line:
            raise UsageError("--line needs a script to trace: torchdoctor trace --line FILE:N SCRIPT [ARGS...]")
        if args.op:
            return op_report(args.op)
        raise UsageError("nothing to trace: torchdoctor trace [OPTIONS] SCRIPT [ARGS...] or torchdoctor trace --op OP")
    if args.op:
        _resolve(args.op)  # a misspelt op is refused before the script runs
    target = target_from(args)
    target.check()
    if on_a_terminal():  # the script owns the terminal while it runs: one line now, the report at the end
        print(f"torchdoctor: tracing {target.display()} (optimizer steps {args.skip + 1}-{args.skip + args.steps}); "
              "the report follows when it ends", file=sys.stderr, flush=True)
    chrome = os.path.abspath(args.chrome_trace) if args.chrome_trace else None  # the script may change directory
    options = TraceOptions(steps=args.steps, skip=args.skip, stop=args.stop, chrome=chrome,
                           lines=tuple(args.line), ops=tuple(args.op))
    def build(finished: Finished, records: RunRecords) -> Report:
        report = run_summary.build(target, finished, records, command="trace")
        add_trace(report, records.traces, options)
        return report

    return observe(target, config, build, {"detectors": [TRACER], CONFIG_KEY: options.to_dict()})[0]


def _resolve(names: list[str]) -> list[str]:
    from torchdoctor.trace.oppath import resolve

    return [resolve(name) for name in names]


def op_report(names: list[str]) -> Report:
    """One op's whole path, read from this install (no script runs)."""
    from torchdoctor.trace.oppath import path_of

    report = Report(command="trace")
    report.sections["op_paths"] = [path_of(name).to_dict() for name in names]
    return report
