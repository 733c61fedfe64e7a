"""The `torchdoctor` command: sub-commands, common options, and the one place that maps
outcomes to exit statuses (0 clean, 1 findings at or above --fail-on, 2 the tool failed).

Each command family lives in its own package and exposes a `command` module with
`HELP`, `add_arguments(parser)` and `execute(args, config) -> Report` (or, with
`REPORTS = False`, `execute(args, None) -> int` for commands that print no report). Those modules must not
import torch at import time, so `torchdoctor lint` and `torchdoctor rules` stay fast.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import TextIO

from torchdoctor._version import __version__
from torchdoctor.core import config as config_module
from torchdoctor.core.errors import UsageError
from torchdoctor.core.plugins import PluginError
from torchdoctor.core.report import ExitStatus, Report
from torchdoctor.renderers import FORMATS, outputs, render

#: sub-command -> module implementing it (in the order `--help` shows them)
COMMANDS = {
    "lint": "torchdoctor.linter.command",
    "run": "torchdoctor.run.command",
    "trace": "torchdoctor.trace.command",
    "check": "torchdoctor.health.command",
    "env": "torchdoctor.env.command",
    "dist": "torchdoctor.dist.command",
    "rules": "torchdoctor.catalog.rules_command",
    "rule": "torchdoctor.catalog.rule_command",
}


def _common_options() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    group = common.add_argument_group("report options")
    group.add_argument("--format", choices=FORMATS, default="text", help="how to print the report (default: text)")
    outputs.add_options(group)
    group.add_argument(
        "--fail-on", choices=config_module.FAIL_ON, default=None,
        help="exit 1 when a finding is at or above this severity (default: error)",
    )
    group.add_argument("--select", action="append", metavar="RULES", help="only these rules: codes, code prefixes, names or categories, comma-separated")
    group.add_argument("--ignore", action="append", metavar="RULES", help="skip these rules (same forms as --select)")
    group.add_argument("--severity", action="append", metavar="CODE=LEVEL", help="override a rule's severity, e.g. TD101=warning")
    group.add_argument("--config", type=Path, metavar="PYPROJECT", help="read [tool.torchdoctor] from this file instead of the nearest pyproject.toml")
    color = group.add_mutually_exclusive_group()
    color.add_argument("--color", dest="color", action="store_true", default=None, help="always colour the text report")
    color.add_argument("--no-color", dest="color", action="store_false", help="never colour the text report")
    return common


class _Parser(argparse.ArgumentParser):
    """The top-level parser. Plain argparse reports an option a sub-command does not know with
    the top level's usage (`torchdoctor [-h] [--version] COMMAND ...`), which lists none of the
    options that would have been right; this one answers with the sub-command's usage."""

    commands: dict[str, argparse.ArgumentParser]

    def parse_args(self, args: Sequence[str] | None = None, namespace: None = None) -> argparse.Namespace:  # type: ignore[override]
        parsed, unknown = self.parse_known_args(args, namespace)
        if unknown:
            self.commands[parsed.command].error(f"unrecognized arguments: {' '.join(unknown)}")
        return parsed


def build_parser(only: str | None = None) -> tuple[argparse.ArgumentParser, dict[str, ModuleType]]:
    """The parser of every command; with `only`, that command's module alone is imported (the
    others are named, without their options): `torchdoctor run` pays for no other command's imports."""
    parser = _Parser(
        prog="torchdoctor",
        description="Find what is wrong with PyTorch training code: where, why, and how to fix it.",
    )
    parser.add_argument("--version", action="version", version=f"torchdoctor {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True, parser_class=argparse.ArgumentParser)
    common = _common_options()
    modules: dict[str, ModuleType] = {}
    parser.commands = {}
    for name, module_name in COMMANDS.items():
        if only is not None and name != only:
            commands.add_parser(name)
            continue
        module = importlib.import_module(module_name)
        modules[name] = module
        reports = getattr(module, "REPORTS", True)
        sub = commands.add_parser(
            name, help=module.HELP, description=module.HELP, parents=[common] if reports else []
        )
        module.add_arguments(sub)
        parser.commands[name] = sub
    return parser, modules


def _command_in(argv: list[str]) -> str | None:
    """The command the arguments name (their first, when it is one); None for `--help`, `--version`."""
    return argv[0] if argv and argv[0] in COMMANDS else None


def _split(values: list[str] | None) -> list[str]:
    return [item.strip() for value in values or [] for item in value.split(",") if item.strip()]


def load_config(args: argparse.Namespace) -> config_module.Config:
    start = Path.cwd()
    config = config_module.load(args.config, start=start)
    return config.with_overrides(
        select=_split(args.select),
        ignore=_split(args.ignore),
        severity=_split(args.severity),
        fail_on=args.fail_on,
    )


def finish(report: Report, args: argparse.Namespace, config: config_module.Config, stream: TextIO) -> int:
    """Filter, render and write the report (and `args.outputs`, checked by `outputs.resolve`);
    return the exit status the contract asks for.

    `report.fatal_rules` are rules that mean the tool could not do its whole job (lint: a file
    it could not read or parse): any of them left after filtering makes the exit status 2.
    """
    report.findings = config.settle(report.findings)
    code = int(report.exit_code(config.fail_on))
    if report.script_end:  # run, trace: the script's status and torchdoctor's, side by side
        report.title = report.title.replace(report.script_end, f"{report.script_end} · {report.exit_words(config.fail_on)}", 1)
        report.meta["torchdoctor_exit_status"] = code
    render(report, args.format, stream, fail_on=config.fail_on, color=args.color)
    outputs.write(report, args.outputs, config.fail_on)
    return code


def main(argv: list[str] | None = None) -> int:
    command = "this command"
    try:
        parser, modules = build_parser(_command_in(sys.argv[1:] if argv is None else argv))
        args = parser.parse_args(argv)
        command = f"`torchdoctor {args.command}`"
        module = modules[args.command]
        if not getattr(module, "REPORTS", True):
            return int(module.execute(args, None))
        config = load_config(args)
        args.outputs = outputs.resolve(args.output, args.output_format, args.html)  # before the command runs anything
        report = module.execute(args, config)
        return finish(report, args, config, sys.stderr if report.stream == "stderr" else sys.stdout)
    except (UsageError, PluginError) as exc:  # a malformed plugin is its author's to fix, not ours
        print(f"torchdoctor: error: {exc}", file=sys.stderr)
        return ExitStatus.TOOL_ERROR
    except KeyboardInterrupt:
        print("torchdoctor: interrupted", file=sys.stderr)
        return ExitStatus.INTERRUPTED
    except BrokenPipeError:
        return ExitStatus.CLEAN
    except ModuleNotFoundError as exc:
        if exc.name != "torch":
            return _internal_error(exc)
        print(  # lint, rules and env work without torch (a lint-only CI job); the other commands need it
            f"torchdoctor: error: {command} needs PyTorch, which is not installed for "
            f"{sys.executable}: install it first (`{sys.executable} -m pip install torch`)",
            file=sys.stderr,
        )
        return ExitStatus.TOOL_ERROR
    except Exception as exc:
        return _internal_error(exc)


def _internal_error(exc: BaseException) -> int:
    """The tool's own failure: one line, the traceback only on request."""
    if os.environ.get("TORCHDOCTOR_DEBUG"):
        traceback.print_exc()
    print(
        f"torchdoctor: internal error: {type(exc).__name__}: {exc} "
        "(set TORCHDOCTOR_DEBUG=1 for the traceback and report it)",
        file=sys.stderr,
    )
    return ExitStatus.TOOL_ERROR


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
