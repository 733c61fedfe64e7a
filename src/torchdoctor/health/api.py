"""`torchdoctor.check(model, data, loss_fn=None, optimizer=None, *, select=, ignore=, config=, **options) -> Report`.

Runs every check on private copies and leaves the caller's model, optimizer, data and random
states exactly as they were (bit for bit).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any, Unpack

from torch import nn
from torch.utils.data import DataLoader

from torchdoctor.core.config import for_api
from torchdoctor.core.errors import UsageError
from torchdoctor.core.report import Report
from torchdoctor.health import target
from torchdoctor.health.batch import DataError, first_batch
from torchdoctor.health.checks.loader import available_cpus
from torchdoctor.health.context import CheckContext, CheckOptions, Options, Subject
from torchdoctor.health.isolation import Isolation
from torchdoctor.health.runner import NAMES, run_checks
from torchdoctor.health.target import check_parts, describe_exception
from torchdoctor.introspect.sites import Locator, caller_site


def check(model: Any, data: Any = None, loss_fn: Any = None, optimizer: Any = None, *,
          select: Sequence[str] | None = None, ignore: Sequence[str] | None = None,
          config: str | os.PathLike[str] | None = None, **options: Unpack[CheckOptions]) -> Report:
    """Health-check a model with its data (a DataLoader or one batch `(inputs, targets)`),
    and optionally its loss function and optimizer. `check(make)`, with a factory alone (the
    function `torchdoctor check file.py:make` calls), checks what it returns.

    As `torchdoctor check` does: `[tool.torchdoctor]` of the nearest pyproject.toml above the
    working directory (or of `config`) chooses the rules and their severities, `select` /
    `ignore` take rule codes, code prefixes, names or categories as on the command line, and a
    `# noqa: TD...` on a finding's line silences it.

    Options: `overfit_steps` (300), `overfit_samples` (8), `overfit_max_seconds` (120: a safety
    net, said in a notice when it fires), `progress` (None: only on a
    terminal), `skip` (check names to leave out), and, to simulate another machine,
    `cpu_count`, `shm_free_bytes` and `start_method`.
    """
    settings = for_api(select=select, ignore=ignore, config=config)
    if data is None and loss_fn is None and optimizer is None and callable(model) and not isinstance(model, nn.Module):
        report = check_factory(model, **options)
    else:
        parts = check_parts(model, data, loss_fn, optimizer)
        subject = Subject(locator=Locator(model, fallback=caller_site(1)), **parts)
        report = run(subject, make_options(dict(options)))
    report.findings = settings.settle(report.findings)
    return report


def check_target(spec: str, **options: Unpack[CheckOptions]) -> Report:
    """The check of a factory named by `spec` ("path/to/file.py:make" or "package.module:make"),
    as `torchdoctor check TARGET` runs it."""
    factory, label = target.load_factory(spec)
    return _check_made(factory, label, spec, dict(options))


def check_factory(factory: Callable[[], Any], **options: Unpack[CheckOptions]) -> Report:
    """The check of what `factory()` returns (the mapping `torchdoctor check` takes: `model`,
    `data`, and optionally `loss_fn` and `optimizer`), as `torchdoctor check file.py:factory`."""
    label = f"{getattr(factory, '__module__', '')}:{getattr(factory, '__qualname__', 'factory')}".lstrip(":")
    return _check_made(factory, label, label, dict(options))


def _check_made(factory: Callable[[], Any], label: str, title: str, options: dict[str, Any]) -> Report:
    result, locator = target.call_factory(factory, label)
    parts = target.validate(result, label)
    locator.model = parts["model"]
    report = run(Subject(locator=locator, label=title, **parts), make_options(options))
    report.notices.extend(target.ignored_keys(result, label))
    return report


def make_options(options: dict[str, Any]) -> Options:
    known = set(Options.__dataclass_fields__)
    unknown = sorted(set(options) - known)
    if unknown:
        raise UsageError(f"unknown check option(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    skip = tuple(options.pop("skip", ()) or ())
    wrong = sorted(set(skip) - set(NAMES))
    if wrong:
        raise UsageError(f"unknown check(s) to skip: {', '.join(wrong)}; the checks are {', '.join(NAMES)}")
    return Options(skip=skip, **options)


def run(subject: Subject, options: Options) -> Report:
    report = Report("check")
    report.title = f"torchdoctor check {subject.label}".rstrip()
    data = subject.data
    owners = (data, data.dataset) if isinstance(data, DataLoader) else ()
    with Isolation(*owners):
        try:
            batch = first_batch(data, max_workers=options.cpu_count or available_cpus())
        except DataError as exc:
            raise UsageError(f"cannot take a batch from the data: {exc}") from None
        except Exception as exc:  # the user's dataset or collate_fn failed
            raise UsageError(f"taking the first batch from the DataLoader raised {describe_exception(exc)}") from None
        ctx = CheckContext(subject, batch, options)
        run_checks(ctx, report)
    return report
