"""`torchdoctor dist`: a preflight of torch.distributed that fails in seconds, with the reason,
where a real job would hang for half an hour.

Two ways to run it: under the job's own launcher (`torchrun --nproc-per-node N -m torchdoctor
dist`, or srun / mpirun / a script that sets RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), or
standalone (`torchdoctor dist --nproc N` starts N local ranks itself). Each rank runs in a child
process (`torchdoctor.dist.worker`); this module never imports torch.
"""

from __future__ import annotations

import argparse
import os
import re
import time

from torchdoctor.core.config import Config
from torchdoctor.core.errors import UsageError
from torchdoctor.core.report import Report

HELP = "preflight torch.distributed: launch variables, rendezvous, ports, collectives and their speed"
DEFAULT_SIZES = "1K,64K,1M,8M"
#: seconds the ranks get to reach the store by default: a broken rendezvous is reported within
#: 15 s of the start (see docs/dist.md, "How it stays bounded")
RENDEZVOUS = 6.0
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--nproc", type=int, metavar="N",
                        help="start N ranks on this machine (default without a launcher: 2)")
    parser.add_argument("--timeout", type=float, default=10.0, metavar="SECONDS",
                        help="how long each collective may take (default: 10)")
    parser.add_argument("--rendezvous-timeout", type=float, metavar="SECONDS",
                        help=f"how long the ranks get to reach the store, from the start (default: {RENDEZVOUS} s, "
                             "or --timeout if shorter; each rank still waits 3 s after importing torch)")
    parser.add_argument("--backend", choices=("auto", "gloo", "nccl"), default="auto",
                        help="gloo always; auto adds nccl when every rank has a GPU (default: auto)")
    parser.add_argument("--sizes", default=DEFAULT_SIZES, metavar="LIST",
                        help=f"message sizes for the latency/bandwidth table (default: {DEFAULT_SIZES})")
    parser.add_argument("--simulate-hang", type=int, metavar="RANK", help=argparse.SUPPRESS)


def parse_sizes(text: str) -> list[int]:
    sizes = []
    for item in text.split(","):
        match = re.fullmatch(r"\s*(\d+)\s*([KMG]?)(?:i?B)?\s*", item, re.I)
        if match is None or int(match.group(1)) == 0:
            raise UsageError(f"--sizes {text!r}: expected sizes such as 1K,64K,1M (bytes, KiB, MiB, GiB)")
        sizes.append(int(match.group(1)) * _UNITS[match.group(2).upper()])
    return sorted(set(sizes))


def execute(args: argparse.Namespace, config: Config) -> Report:
    from torchdoctor.dist import launch
    from torchdoctor.dist.preflight import preflight

    if args.timeout <= 0 or (args.rendezvous_timeout is not None and args.rendezvous_timeout <= 0):
        raise UsageError("--timeout and --rendezvous-timeout must be positive numbers of seconds")
    rendezvous = args.rendezvous_timeout if args.rendezvous_timeout is not None else min(RENDEZVOUS, args.timeout)
    if args.nproc is not None and args.nproc < 1:
        raise UsageError("--nproc must be at least 1")
    sizes = parse_sizes(args.sizes)
    standalone = args.nproc is not None or not launch.is_launched(os.environ)
    report = preflight(
        started=time.time(), environ=dict(os.environ), nproc=(args.nproc or 2) if standalone else None,
        timeout=args.timeout, rendezvous=rendezvous, sizes=sizes, backend=args.backend, hang_rank=args.simulate_hang,
    )
    if report is None:  # a rank other than 0 whose view rank 0 reports: stay quiet
        raise SystemExit(0)
    rank = launch.integer(os.environ.get("RANK")) if not standalone else None
    if rank:  # rank 0 writes --output; another rank that reports writes beside it
        args.outputs = [output.beside(f"rank{rank}") for output in args.outputs]
    if standalone and args.nproc is None:
        report.notices.append("no launcher variables (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT): started 2 local ranks; use --nproc N for more")
    return report
