"""`torchdoctor check TARGET`: the health check of a model, its data, loss and optimizer.

TARGET is `path/to/file.py:factory` or `package.module:factory` (the factory defaults to
`make`); `--model PATH` checks a saved TorchScript or torch.export model on a synthetic batch
instead. This module does not import torch until the command runs.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from torchdoctor.core.config import Config
from torchdoctor.core.errors import UsageError
from torchdoctor.core.report import Report

HELP = "health check of a model, its data, loss and optimizer: one batch, on a copy, 14 checks"

CHECK_NAMES = (
    "forward", "devices", "dtypes", "grad-flow", "registration", "optimizer", "step", "loss",
    "batch-independence", "overfit", "eval-determinism", "non-finite", "dataloader", "custom-functions",
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "target", nargs="?", metavar="TARGET",
        help="path/to/file.py:factory or package.module:factory; the factory takes no arguments and returns "
        "{'model': ..., 'data': DataLoader or (inputs, targets), 'loss_fn': ..., 'optimizer': ...} (default factory: make)",
    )
    saved = parser.add_argument_group("a saved model instead of a factory")
    saved.add_argument("--model", dest="model_path", type=Path, metavar="PATH", help="TorchScript or torch.export archive")
    saved.add_argument("--input-shape", metavar="DIMS", help="one sample's shape, without the batch, e.g. 3,224,224")
    saved.add_argument("--num-classes", type=int, metavar="C", help="check as a C-class classifier (CrossEntropyLoss)")
    saved.add_argument("--batch-size", type=int, metavar="N", help="synthetic batch size (default: the batch a torch.export archive was exported with, else 4)")
    saved.add_argument("--trust-pickle", action="store_true", help="allow a full pickle (torch.save(model)); loading it runs code")
    tuning = parser.add_argument_group("check options")
    tuning.add_argument("--overfit-steps", type=int, default=300, metavar="N", help="at most N steps to overfit one batch (default 300)")
    tuning.add_argument("--skip", action="append", metavar="CHECK", choices=CHECK_NAMES, help=f"leave a check out: {', '.join(CHECK_NAMES)}")
    tuning.add_argument("--no-progress", action="store_true", help="no progress line on stderr")


def execute(args: argparse.Namespace, config: Config) -> Report:
    if (args.target is None) == (args.model_path is None):
        raise UsageError("give a TARGET (path/to/file.py:factory) or --model PATH, not both and not neither")
    if args.overfit_steps < 1:
        raise UsageError("--overfit-steps must be at least 1")
    from torchdoctor.health import api

    options = {
        "overfit_steps": args.overfit_steps,
        "skip": tuple(args.skip or ()),
        "progress": False if args.no_progress else None,
    }
    if args.model_path is None:
        return api.check_target(args.target, **options)
    return api.run(_saved_subject(args), api.make_options(options))


def _saved_subject(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from torch import nn

    from torchdoctor.health import saved
    from torchdoctor.health.context import Subject
    from torchdoctor.introspect.sites import Locator, Site

    if not args.input_shape:
        raise UsageError("--model needs --input-shape (one sample's shape, e.g. 3,224,224)")
    model = saved.load_model(args.model_path, args.trust_pickle)
    batch_size = args.batch_size or saved.example_batch_size(args.model_path) or 4
    if batch_size < 2:
        raise UsageError("--batch-size must be at least 2 (batch independence and batch norm need two samples)")
    inputs, targets = saved.synthetic_batch(saved.parse_shape(args.input_shape), batch_size, args.num_classes)
    loss_fn = nn.CrossEntropyLoss() if args.num_classes else None
    data = (inputs, targets) if targets is not None else (inputs,)
    locator = Locator(model, fallback=Site(str(args.model_path.resolve()), 0))
    return Subject(model=model, data=data, loss_fn=loss_fn, optimizer=None, locator=locator, label=f"--model {args.model_path}")
