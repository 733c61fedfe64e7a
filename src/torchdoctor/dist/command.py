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
                        help="start N ranks on this machine (default without a launcher: 2; with --nnodes: per node)")
    parser.add_argument("--nnodes", type=int, metavar="N",
                        help="a job on N nodes: start this node's ranks (--nproc per node), started on every node "
                             "with its --node-rank and the same --master")
    parser.add_argument("--node-rank", type=int, metavar="K", help="this node's number, 0 to N-1 (node 0 hosts the store)")
    parser.add_argument("--master", metavar="HOST:PORT", help="node 0's address and a free port on it, the same on every node")
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


def _nodes(args: argparse.Namespace) -> tuple[int, int, str, int] | None:
    """(nodes, this node, master host, master port) from --nnodes/--node-rank/--master, checked."""
    given = [args.nnodes is not None, args.node_rank is not None, args.master is not None]
    if not any(given):
        return None
    if not all(given):
        raise UsageError("--nnodes, --node-rank and --master go together: torchdoctor dist --nnodes N --node-rank K --master HOST:PORT")
    if args.nnodes < 1 or not 0 <= args.node_rank < args.nnodes:
        raise UsageError(f"--node-rank {args.node_rank} is not a node of --nnodes {args.nnodes} (0 to {args.nnodes - 1})")
    host, _, port = args.master.rpartition(":")
    if not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise UsageError(f"--master {args.master!r}: expected HOST:PORT, the same on every node (node 0's address)")
    return args.nnodes, args.node_rank, host.strip("[]"), int(port)


def execute(args: argparse.Namespace, config: Config) -> Report:
    from torchdoctor.dist import launch, slurm
    from torchdoctor.dist.preflight import preflight

    if args.timeout <= 0 or (args.rendezvous_timeout is not None and args.rendezvous_timeout <= 0):
        raise UsageError("--timeout and --rendezvous-timeout must be positive numbers of seconds")
    rendezvous = args.rendezvous_timeout if args.rendezvous_timeout is not None else min(RENDEZVOUS, args.timeout)
    if args.nproc is not None and args.nproc < 1:
        raise UsageError("--nproc must be at least 1")
    sizes = parse_sizes(args.sizes)
    nodes = _nodes(args)
    environ, derived = slurm.with_launch(os.environ)
    standalone = nodes is None and (args.nproc is not None or not launch.is_launched(environ))
    report = preflight(
        started=time.time(), environ=environ, nproc=(args.nproc or 2) if standalone or nodes else None,
        timeout=args.timeout, rendezvous=rendezvous, sizes=sizes, backend=args.backend, hang_rank=args.simulate_hang,
        nodes=nodes, derived=derived,
    )
    if report is None:  # a rank other than 0 whose view rank 0 reports: stay quiet
        raise SystemExit(0)
    tag = f"node{nodes[1]}" if nodes and nodes[1] else None
    rank = launch.integer(environ.get("RANK")) if not standalone and not nodes else None
    if rank:  # rank 0 writes --output; another rank that reports writes beside it
        tag = f"rank{rank}"
    if tag:
        args.outputs = [output.beside(tag) for output in args.outputs]
    if standalone and args.nproc is None:
        report.notices.append("no launcher variables (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT): started 2 local ranks; use --nproc N for more")
    return report
