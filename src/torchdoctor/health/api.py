"""`torchdoctor.check(model, data, loss_fn=None, optimizer=None, **options) -> Report`.

Runs every check on private copies and leaves the caller's model, optimizer, data and random
states exactly as they were (bit for bit).
"""

from __future__ import annotations

from typing import Any

from torch.utils.data import DataLoader

from torchdoctor.core.errors import UsageError
from torchdoctor.core.report import Report
from torchdoctor.health import target
from torchdoctor.health.batch import DataError, first_batch
from torchdoctor.health.checks.loader import available_cpus
from torchdoctor.health.context import CheckContext, Options, Subject
from torchdoctor.health.isolation import Isolation
from torchdoctor.health.runner import NAMES, run_checks
from torchdoctor.health.target import check_parts, describe_exception
from torchdoctor.introspect.sites import Locator, caller_site


def check(model: Any, data: Any, loss_fn: Any = None, optimizer: Any = None, **options: Any) -> Report:
    """Health-check a model with its data (a DataLoader or one batch `(inputs, targets)`),
    and optionally its loss function and optimizer.

    Options: `overfit_steps` (300), `overfit_samples` (8), `overfit_max_seconds` (120: a safety
    net, said in a notice when it fires), `progress` (None: only on a
    terminal), `skip` (check names to leave out), and, to simulate another machine,
    `cpu_count`, `shm_free_bytes` and `start_method`.
    """
    parts = check_parts(model, data, loss_fn, optimizer)
    subject = Subject(locator=Locator(model, fallback=caller_site(1)), **parts)
    return run(subject, make_options(options))


def check_target(spec: str, **options: Any) -> Report:
    """The check of a factory named by `spec` ("path/to/file.py:make" or "package.module:make"),
    as `torchdoctor check TARGET` runs it."""
    factory, label = target.load_factory(spec)
    result, locator = target.call_factory(factory, label)
    parts = target.validate(result, label)
    locator.model = parts["model"]
    report = run(Subject(locator=locator, label=spec, **parts), make_options(options))
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
    report.meta["title"] = f"torchdoctor check {subject.label}".rstrip()
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
