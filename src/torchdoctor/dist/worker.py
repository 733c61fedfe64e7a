"""One rank of the preflight: `python -m torchdoctor.dist.worker [options]`, started by
`torchdoctor dist` with the launch variables of that rank.

It reports what it does as events (one JSON object per line on stdout, prefixed with `TDEV `),
so the process that started it knows where it was even if it hangs or dies. Every wait has a
deadline; the collectives run under the process group's own timeout.

Store keys (under `torchdoctor/<run>/`): `count/<rank>` (how many processes claimed the rank),
`facts/<rank>/<n>`, `go` (rank 0's verdict on the rendezvous), `pos/<rank>` (the collective a
rank is in), `result/<rank>` (its collectives).
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import math
import os
import platform
import socket
import statistics
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from torchdoctor.dist import launch, network
from torchdoctor.dist.facts import Collective
from torchdoctor.dist.network import Listeners, knock, split_address
from torchdoctor.env.text import one_line

PREFIX = "TDEV "
OPS = ("all_reduce", "broadcast", "all_gather", "barrier")
POLL = 0.05
#: non-zero ranks wait this much longer than rank 0, so that rank 0, which sees the whole job, speaks first
FOLLOWER_MARGIN = 2.0
#: every rank waits at least this long once it is ready, however long importing torch took
#: (a cold import on a network file system can take longer than the whole rendezvous timeout)
MIN_WAIT_AFTER_READY = 3.0
#: seconds one attempt to reach another node's listening address may take
KNOCK_TIMEOUT = 2.0
#: other nodes' addresses one node tries at most (rank 0's node first, then the next ones in order)
KNOCKS = 64


def emit(event: str, **data: Any) -> None:
    sys.stdout.write(PREFIX + json.dumps({"ev": event, **data}, default=str) + "\n")
    sys.stdout.flush()


class Worker:
    def __init__(self, args: argparse.Namespace, environ: dict[str, str]) -> None:
        self.args = args
        self.rank = int(environ["RANK"])
        self.world = int(environ["WORLD_SIZE"])
        self.addr = environ["MASTER_ADDR"]
        self.port = int(environ["MASTER_PORT"])
        self.local_rank = launch.integer(environ.get("LOCAL_RANK"))
        self.agent_store = environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True"
        self.deadline = args.deadline + (FOLLOWER_MARGIN if self.rank else 0.0)
        run = environ.get("TORCHELASTIC_RUN_ID", "") + "-" + environ.get("TORCHELASTIC_RESTART_COUNT", "")
        self.prefix = f"torchdoctor/{run}/"
        self.environ = environ
        self.store: Any = None
        self.listeners = Listeners()  # open until the process ends: the other nodes knock on them
        #: GROUP_RANK (torchrun), SLURM_NODEID or --node-rank: which node this rank is on
        self.node = environ.get("GROUP_RANK") or environ.get("SLURM_NODEID")
        self.timeout = datetime.timedelta(seconds=args.timeout)
        self.hosts_store = self.rank == 0 and not self.agent_store
        self._probe: str | None = "refused"
        self._prober: threading.Thread | None = None
        self._ready = False  # torch is imported: from then on the deadline holds
        if not self.hosts_store:  # reach for the store while torch imports: the two waits overlap
            self._prober = threading.Thread(target=self._reach_store, name="reach-store", daemon=True)
            self._prober.start()

    def _reach_store(self) -> None:
        # no deadline while torch still imports: the rank gets its time after that (see `ready`),
        # however long the import took on a busy machine; the coordinator stops a rank that stays silent
        self._probe = wait_for_port(self.addr, self.port, lambda: self.deadline if self._ready else math.inf)

    # -- facts -------------------------------------------------------------------------------
    def facts(self) -> dict[str, Any]:
        import torch

        facts: dict[str, Any] = {
            "rank": self.rank, "hostname": socket.gethostname(), "pid": os.getpid(),
            "local_rank": self.local_rank, "local_world_size": launch.integer(self.environ.get("LOCAL_WORLD_SIZE")),
            "world_size": self.world, "master": f"{self.addr}:{self.port}", "torch": torch.__version__,
            "cuda": torch.version.cuda, "python": platform.python_version(),
            "rng": hashlib.sha1(torch.get_rng_state().numpy().tobytes()).hexdigest()[:16],
            "interfaces": sorted(name for _, name in socket.if_nameindex()) if hasattr(socket, "if_nameindex") else [],
            "socket_ifname": {k: self.environ[k] for k in ("GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME") if k in self.environ},
            "node": self.node, **self.network(),
        }
        if torch.cuda.is_available():
            count = torch.cuda.device_count()
            facts["gpu_count"] = count
            index = self.local_rank if self.local_rank is not None and self.local_rank < count else None
            if index is None and count == 1:
                index = 0
            if index is not None:
                props = torch.cuda.get_device_properties(index)
                facts["device"] = str(getattr(props, "uuid", "") or props.name)
            try:
                facts["nccl"] = ".".join(map(str, torch.cuda.nccl.version()))
            except Exception:  # noqa: BLE001 - built without NCCL
                pass
        else:
            facts["gpu_count"] = 0
        return facts

    def network(self) -> dict[str, Any]:
        """This host's addresses, and (one rank per node) listeners on the addresses the backends
        would pick, for the other nodes to reach (see network.py)."""
        interfaces = network.interface_ips()
        host_ips = launch.resolve(socket.gethostname(), ordered=True) or []
        said: dict[str, Any] = {"interface_ips": interfaces, "local_ips": network.local_ips(), "host_ips": host_ips,
                                "master_resolved": launch.resolve(self.addr)}
        if self.local_rank in (None, 0):
            probes: list[dict[str, str]] = []
            for variable in ("GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME"):
                picked = network.backend_address(variable, self.environ.get(variable), interfaces, host_ips)
                if picked is None or any(p["address"].startswith(picked[1] + ":") for p in probes):
                    continue
                address = self.listeners.listen(picked[1])
                if address is not None:
                    probes.append({"via": picked[0], "address": address})
            said["probes"] = probes
        return said

    # -- store ------------------------------------------------------------------------------
    def ready(self, facts: dict[str, Any]) -> None:
        """torch is imported: make sure the deadlines leave time to meet the others."""
        margin = FOLLOWER_MARGIN if self.rank else 0.0
        self.deadline = max(self.deadline, time.time() + MIN_WAIT_AFTER_READY + margin)
        self._ready = True
        facts["ready_seconds"] = round(time.time() - (self.args.deadline - self.args.rendezvous), 3)

    def remaining(self) -> float:
        return max(0.1, self.deadline - time.time())

    def connect(self) -> bool:
        """Host the store (rank 0, unless the launcher does) or reach it; False after reporting why not."""
        from torch.distributed import TCPStore

        host = self.hosts_store
        if self._prober is not None:
            self._prober.join()
            kind = self._probe
            if kind is not None:
                waited = self.deadline - (self.args.deadline - self.args.rendezvous)
                emit("store_failed", connect=kind, error=describe_connect(kind, self.addr, self.port, waited))
                return False
        try:
            self.store = TCPStore(self.addr, self.port, self.world, host,
                                  timeout=datetime.timedelta(seconds=self.remaining()), wait_for_workers=False)
        except Exception as exc:  # noqa: BLE001 - the store's own error is the fact
            text = one_line(exc)
            emit("store_failed", connect="in use" if "EADDRINUSE" in text else "no answer", error=text)
            return False
        return True

    def key(self, *parts: object) -> str:
        return self.prefix + "/".join(map(str, parts))

    def arrive(self, facts: dict[str, Any]) -> dict[str, Any] | None:
        """Announce this rank; rank 0 waits for all and says go (or who is missing). None: no go."""
        count = self.store.add(self.key("count", self.rank), 1)
        self.store.set(self.key("facts", self.rank, count), json.dumps(facts))
        if count > 1:
            emit("duplicate", count=count)
        if self.rank == 0:
            return self.lead(facts)
        try:
            self.store.wait([self.key("go")], datetime.timedelta(seconds=self.remaining() + self.args.timeout))
            go = json.loads(self.store.get(self.key("go")))
        except Exception as exc:  # noqa: BLE001
            emit("store_failed", connect="no answer", error=f"rank 0 never answered at {self.addr}:{self.port}: {one_line(exc)}")
            return None
        if not go["ok"]:
            emit("aborted", missing=go["missing"])
            return None
        return go

    def lead(self, facts: dict[str, Any]) -> dict[str, Any]:
        waiting = set(range(self.world))
        while waiting and time.time() < self.deadline:
            waiting = {r for r in waiting if not self.store.check([self.key("count", r)])}
            if waiting:
                time.sleep(POLL)
        backends = ["gloo"]
        if self.args.backend in ("auto", "nccl") and not waiting:
            gpus = [self.peer_facts(r).get("gpu_count") or 0 for r in range(self.world)]
            if all(gpus) and facts.get("nccl") or self.args.backend == "nccl":
                backends.append("nccl")
        go = {"ok": not waiting, "missing": sorted(waiting), "backends": backends}
        if not waiting:  # where every rank is, and what each node listens on (see `knock`)
            peers = [facts if r == 0 else self.peer_facts(r) for r in range(self.world)]
            go["nodes"] = {str(p["rank"]): [p.get("hostname"), p.get("node")] for p in peers}
            go["probes"] = {str(p["rank"]): p["probes"] for p in peers if p.get("probes")}
        self.store.set(self.key("go"), json.dumps(go))
        start = self.args.deadline - self.args.rendezvous
        emit("rendezvous", missing=sorted(waiting), seconds=round(time.time() - start, 3), backends=backends,
             deadline=round(self.deadline - start, 3))
        return go

    def peer_facts(self, rank: int) -> dict[str, Any]:
        if not self.store.check([self.key("count", rank)]):
            return {"rank": rank, "arrived": False}
        count = int(self.store.get(self.key("count", rank)))
        facts = json.loads(self.store.get(self.key("facts", rank, 1)))
        facts.update(arrived=True, duplicates=count)
        return facts

    # -- the other nodes' addresses ---------------------------------------------------------
    def knock(self, go: dict[str, Any]) -> None:
        """One rank per node: connect to the addresses every other node listens on."""
        if self.local_rank not in (None, 0):
            return
        targets = [(int(rank), probe) for rank, probes in sorted(go.get("probes", {}).items(), key=lambda kv: int(kv[0]))
                   if int(rank) != self.rank for probe in probes]
        targets = sorted(targets, key=lambda t: (t[0] != 0, (t[0] - self.rank) % self.world))[:KNOCKS]
        if not targets:
            return

        def attempt(target: tuple[int, dict[str, str]]) -> dict[str, Any]:
            rank, probe = target
            host, port = split_address(probe["address"])
            return {"to": rank, "via": probe["via"], "address": probe["address"], "problem": knock(host, port, KNOCK_TIMEOUT)}

        with ThreadPoolExecutor(max_workers=min(16, len(targets))) as pool:
            reach = list(pool.map(attempt, targets))
        self.store.set(self.key("reach", self.rank), json.dumps(reach))
        emit("reach", reach=reach)

    # -- collectives --------------------------------------------------------------------------
    def run_collectives(self, backends: list[str], nodes: dict[str, Any] | None = None) -> None:
        import torch.distributed as dist

        groups: dict[str, Any] = {}
        try:
            dist.init_process_group("gloo", store=_prefix_store(self.store, self.key("pg")), rank=self.rank,
                                    world_size=self.world, timeout=self.timeout)
            groups["gloo"] = None
            if "nccl" in backends:
                import torch

                torch.cuda.set_device((self.local_rank or 0) % max(1, torch.cuda.device_count()))
                groups["nccl"] = dist.new_group(backend="nccl", timeout=self.timeout)
        except Exception as exc:  # noqa: BLE001
            emit("error", stage="process group", error=one_line(exc))
            self.publish([])  # rank 0 still gathers what every rank said of itself
            return
        results: list[dict[str, Any]] = []
        for backend, group in groups.items():
            for op in OPS:
                for size in (self.args.sizes if op != "barrier" else [0]):
                    if self.args.hang_rank == self.rank:
                        emit("hang", before=f"{op} ({backend})")
                        time.sleep(3600)
                    result = self.measure(op, backend, group, size)
                    results.append(result)
                    if result["problem"] in ("timeout", "error"):
                        self.publish(results)
                        return
        for backend in groups:
            for scope, ranks in scopes(nodes or {}):
                group = dist.new_group(ranks, backend=backend, timeout=self.timeout)  # every rank, member or not
                if self.rank not in ranks:
                    continue
                for size in self.args.sizes:
                    result = self.measure("all_reduce", backend, group, size, scope, ranks)
                    results.append(result)
                    if result["problem"] in ("timeout", "error"):
                        self.publish(results)
                        return
        self.publish(results)

    def measure(self, op: str, backend: str, group: Any, size: int, scope: str = "world", ranks: list[int] | None = None) -> dict[str, Any]:
        label = Collective(op=op, backend=backend, bytes=size, scope=scope, group=ranks).label
        world = len(ranks) if ranks else self.world
        rank = ranks.index(self.rank) if ranks else self.rank
        self.store.set(self.key("pos", self.rank), json.dumps({"in": label}))
        emit("enter", label=label)
        times: list[float] = []
        problem = detail = None
        started = time.perf_counter()
        try:
            for iteration in range(self.args.iterations + 1):
                seconds, wrong = run_once(op, backend, group, size, rank, world)
                if wrong:
                    problem, detail = "wrong", wrong
                    break
                if iteration:
                    times.append(seconds)
                if time.perf_counter() - started > self.args.budget and len(times) >= 2:
                    break
        except Exception as exc:  # noqa: BLE001
            waited = time.perf_counter() - started
            timed_out = "timed out" in str(exc).lower() or "timeout" in str(exc).lower() or waited >= self.timeout.total_seconds() * 0.9
            problem, detail = ("timeout" if timed_out else "error"), one_line(exc)
        result = {"op": op, "backend": backend, "bytes": size, "ok": problem is None, "problem": problem,
                  "detail": detail, "seconds": statistics.median(times) if times else None}
        if ranks:
            result.update(scope=scope, group=ranks)
        self.store.set(self.key("pos", self.rank), json.dumps({"done": label}))
        emit("collective", **result)
        return result

    def publish(self, results: list[dict[str, Any]]) -> None:
        self.store.set(self.key("result", self.rank), json.dumps(results))
        if self.rank == 0:
            self.gather()

    def gather(self) -> None:
        """Rank 0: collect every rank's facts and results (or where it is stuck) for the report."""
        limit = time.time() + min(self.args.timeout, 5.0) + 1.0
        pending = set(range(1, self.world))
        while pending and time.time() < limit:
            pending = {r for r in pending if not self.store.check([self.key("result", r)])}
            if pending:
                time.sleep(POLL)
        peers = []
        for rank in range(1, self.world):
            facts = self.peer_facts(rank)
            if self.store.check([self.key("result", rank)]):
                facts["collectives"] = json.loads(self.store.get(self.key("result", rank)))
            if self.store.check([self.key("reach", rank)]):
                facts["reach"] = json.loads(self.store.get(self.key("reach", rank)))
            if self.store.check([self.key("pos", rank)]):
                position = json.loads(self.store.get(self.key("pos", rank)))
                facts["position"] = position.get("in") if rank in pending else None
                facts["last_completed"] = position.get("done")
            peers.append(facts)
        emit("peers", ranks=peers)


def scopes(nodes: dict[str, Any]) -> list[tuple[str, list[int]]]:
    """The groups that tell inter-node from intra-node bandwidth: one rank of every node, and the
    ranks of each node that has several (none on a single node)."""
    by_node: dict[tuple[Any, ...], list[int]] = {}
    for rank, where in nodes.items():
        by_node.setdefault(tuple(where), []).append(int(rank))
    if len(by_node) < 2:
        return []
    members = [sorted(ranks) for _, ranks in sorted(by_node.items(), key=lambda kv: min(kv[1]))]
    return [("inter-node", [ranks[0] for ranks in members]), *(("intra-node", ranks) for ranks in members if len(ranks) > 1)]


def run_once(op: str, backend: str, group: Any, size: int, rank: int, world: int) -> tuple[float, str | None]:
    """One call of `op`, timed; the second value says what was wrong with its result, if anything."""
    import torch
    import torch.distributed as dist

    device = torch.device("cuda", torch.cuda.current_device()) if backend == "nccl" else torch.device("cpu")
    count = max(1, size // 4)
    if op == "all_reduce":
        tensor = torch.full((count,), float(rank + 1), device=device)
        start = _now(device)
        dist.all_reduce(tensor, group=group)
        seconds = _now(device) - start
        expected = world * (world + 1) / 2
        return seconds, _compare(tensor, expected, rank, op)
    if op == "broadcast":
        tensor = (torch.arange(count, device=device) % 251).float() if rank == 0 else torch.zeros(count, device=device)
        start = _now(device)
        dist.broadcast(tensor, src=0, group=group)
        seconds = _now(device) - start
        sent = (torch.arange(count, device=device) % 251).float()
        bad = (tensor != sent).nonzero()
        return seconds, (f"rank {rank} got {tensor[bad[0, 0]].item():g} at element {bad[0, 0].item()}, expected "
                         f"{sent[bad[0, 0]].item():g}" if len(bad) else None)
    if op == "all_gather":
        chunk = max(1, count // world)
        tensor = torch.full((chunk,), float(rank), device=device)
        out = [torch.empty(chunk, device=device) for _ in range(world)]
        start = _now(device)
        dist.all_gather(out, tensor, group=group)
        seconds = _now(device) - start
        for source, received in enumerate(out):
            wrong = _compare(received, float(source), rank, f"{op} (the part from rank {source})")
            if wrong:
                return seconds, wrong
        return seconds, None
    start = _now(device)
    dist.barrier(group=group)
    return _now(device) - start, None


def _compare(tensor: Any, expected: float, rank: int, what: str) -> str | None:
    bad = (tensor != expected).nonzero()
    if not len(bad):
        return None
    index = int(bad[0, 0])
    return f"rank {rank} got {tensor[index].item():g} from {what} at element {index}, expected {expected:g}"


def _now(device: Any) -> float:
    if device.type == "cuda":
        import torch

        torch.cuda.synchronize(device)
    return time.perf_counter()


def _prefix_store(store: Any, prefix: str) -> Any:
    from torch.distributed import PrefixStore

    return PrefixStore(prefix, store)


def wait_for_port(addr: str, port: int, deadline: float | Callable[[], float]) -> str | None:
    """Connect to addr:port until it answers or `deadline` (epoch seconds, or a function giving
    them: a deadline that may move later); None when it answers, else why not."""
    kind = "refused"
    until = deadline if callable(deadline) else lambda: deadline
    while True:
        left = until() - time.time()
        if left <= 0:
            return kind
        kind = knock(addr, port, min(1.0, left)) or ""
        if not kind or kind == "unresolvable":
            return kind or None
        time.sleep(min(0.2, max(0.0, until() - time.time())))


def describe_connect(kind: str, addr: str, port: int, waited: float) -> str:
    said = {
        "refused": "the connection was refused: nothing listens there",
        "timeout": "connection attempts timed out: no answer (a firewall, or the wrong address)",
        "unreachable": "there is no route to that host",
        "unresolvable": f"{addr!r} does not resolve to an address",
    }[kind]
    return f"could not reach the store at {addr}:{port} within {waited:.0f} s: {said}"


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="torchdoctor.dist.worker")
    parser.add_argument("--deadline", type=float, required=True, help="epoch seconds by which rank 0 must see every rank")
    parser.add_argument("--rendezvous", type=float, required=True, help="seconds the rendezvous may take")
    parser.add_argument("--timeout", type=float, required=True)
    parser.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",")], required=True)
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--budget", type=float, default=0.5, help="seconds of timing per size at most")
    parser.add_argument("--backend", choices=("auto", "gloo", "nccl"), default="auto")
    parser.add_argument("--hang-rank", type=int, default=None)
    return parser.parse_args(argv)


def main(argv: list[str]) -> None:
    args = parse_args(argv)
    worker = Worker(args, dict(os.environ))
    try:
        facts = worker.facts()
        worker.ready(facts)
        emit("facts", facts=facts)
        if not worker.connect():
            return
        emit("connected")
        go = worker.arrive(facts)
        if go is None or not go["ok"]:
            return
        worker.knock(go)
        worker.run_collectives(go["backends"], go.get("nodes"))
    except Exception as exc:  # noqa: BLE001 - reported, never a traceback
        emit("error", stage="preflight", error=one_line(exc))
    finally:
        emit("done")
        sys.stdout.flush()
        os._exit(0)  # never hang in process-group teardown after a timeout


if __name__ == "__main__":
    main(sys.argv[1:])
