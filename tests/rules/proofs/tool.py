"""Proof harness for `proof="tool"` rules (the tool's own TD00x problems with files).

The example is a small Python script that *makes* files in `folder` (a symbolic link loop, a
generated file): it runs with `folder` as the working directory, then the folder and every
file in it are linted by name, as a user naming them on the command line would.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from tests import children
from torchdoctor.core.config import Config
from torchdoctor.core.rule import Rule
from torchdoctor.linter.runner import Options, lint_paths


def triggered(source: str, folder: Path, rule: Rule) -> set[str]:
    folder.mkdir(parents=True, exist_ok=True)
    children.run([sys.executable, "-c", source], cwd=folder, check=True, timeout=60)
    names = sorted(str(folder / name) for name in os.listdir(folder))
    outcome = lint_paths(names, Config(), Options())
    return {finding.rule for finding in outcome.report.findings}
