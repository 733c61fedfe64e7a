"""`torchdoctor.lint(paths) -> Report`: the static checks from Python, as `torchdoctor lint` runs them.

No torch is imported: like the command, this works in a job that has no PyTorch installed.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from torchdoctor.core import config as config_module
from torchdoctor.core.report import Report

PathLike = str | os.PathLike[str]


def lint(
    paths: PathLike | Sequence[PathLike] = ".",
    *,
    select: Sequence[str] | None = None,
    ignore: Sequence[str] | None = None,
    exclude: Sequence[str] = (),
    config: PathLike | None = None,
    respect_gitignore: bool = True,
) -> Report:
    """Lint files and folders; the findings are in `.findings`, `print(report)` shows them.

    - `paths`: a file or folder, or several (default: the working directory);
    - `select` / `ignore`: rule codes, code prefixes, names or categories, as on the command line;
    - `exclude`: gitignore-style patterns of files not to lint;
    - `config`: the pyproject.toml whose `[tool.torchdoctor]` to read (default: the nearest one
      above the working directory, as the command reads it);
    - `respect_gitignore`: skip what the project's .gitignore files ignore (default: True).

    A missing path raises `torchdoctor.core.errors.UsageError`; a file that cannot be read or
    parsed is a finding.
    """
    from torchdoctor.linter.runner import Options, lint_paths

    given = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    settings = config_module.for_api(select=select, ignore=ignore, config=config, exclude=exclude)
    outcome = lint_paths([os.fspath(p) for p in given], settings, Options(respect_gitignore=respect_gitignore, progress=False))
    report = outcome.report
    report.findings = settings.settle(report.findings)
    return report
