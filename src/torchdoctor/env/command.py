"""`torchdoctor env` (placeholder until its issue lands)."""

from __future__ import annotations

import argparse

from torchdoctor.core.config import Config
from torchdoctor.core.errors import UsageError
from torchdoctor.core.report import Report

HELP = "env (not built yet)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("rest", nargs=argparse.REMAINDER)


def execute(args: argparse.Namespace, config: Config) -> Report:
    raise UsageError("torchdoctor env is not built yet")
