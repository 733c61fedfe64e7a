"""The preflight as the text report shows it: one ✅/❌/⚠️ line per stage, and one line per
collective and backend with its latency and bandwidth by message size (also in the JSON)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from torchdoctor.core.finding import Finding, Severity
from torchdoctor.core.report import CheckResult, Status
from torchdoctor.dist.facts import DistFacts
from torchdoctor.env.text import human_bytes
from torchdoctor.dist.verdicts import RULES, ranks_text
from torchdoctor.dist.worker import MIN_WAIT_AFTER_READY

TITLES = {"launch": "Launch environment", "rendezvous": "Rendezvous", "consistency": "Consistency across ranks",
          "gpus": "GPU mapping"}
#: bus bandwidth factor (as nccl-tests reports it): comparable with the link speed
BUS_FACTOR = {"all_reduce": lambda n: 2 * (n - 1) / n, "all_gather": lambda n: (n - 1) / n, "broadcast": lambda n: 1.0}


def bandwidth_table(facts: DistFacts) -> list[dict[str, Any]]:
    """One row per backend, op and size: the slowest rank's median time, and the bandwidth."""
    times: dict[tuple[str, str, int], list[float]] = defaultdict(list)
    for rank in facts.ranks:
        for c in rank.collectives:
            if c.ok and c.seconds is not None:
                times[(c.backend, c.op, c.bytes)].append(c.seconds)
    world = facts.world_size or len(facts.ranks) or 1
    rows = []
    for (backend, op, size), seen in times.items():
        seconds = max(seen)
        row: dict[str, Any] = {"backend": backend, "op": op, "bytes": size, "seconds": seconds, "ranks": len(seen)}
        if op in BUS_FACTOR and size and seconds > 0:
            row["algbw_gbps"] = size / seconds / 1e9
            row["busbw_gbps"] = row["algbw_gbps"] * BUS_FACTOR[op](world)
        rows.append(row)
    return rows


def checks(facts: DistFacts, by_group: dict[str, list[Finding]]) -> list[CheckResult]:
    out = [
        _check("launch", _launch(facts), by_group, True),
        _check("rendezvous", _rendezvous(facts), by_group, any(r.arrived is not None for r in facts.ranks)),
        _check("consistency", _consistency(facts), by_group, len([r for r in facts.ranks if r.torch]) > 1),
        _check("gpus", _gpus(facts), by_group, any(r.gpu_count for r in facts.ranks)),
    ]
    found = by_group.get("collectives", [])
    table = bandwidth_table(facts)
    seen = []
    for rank in facts.ranks:
        for c in rank.collectives:
            if (c.backend, c.op) not in seen:
                seen.append((c.backend, c.op))
    for backend, op in seen:
        failed = [c for r in facts.ranks for c in r.collectives if (c.backend, c.op) == (backend, op) and not c.ok]
        rows = sorted((r for r in table if (r["backend"], r["op"]) == (backend, op)), key=lambda r: r["bytes"])
        status = Status.FAILED if failed else Status.PASSED
        verdict = f"{failed[0].problem} at {human_bytes(failed[0].bytes)}" if failed else f"correct on {_ranks_with(facts, backend, op)} ranks"
        cells = [_cell(row) for row in rows]
        out.append(CheckResult(name=f"{backend}.{op}", title=f"{op} · {backend}", status=status,
                               detail=" · ".join([verdict, *cells]), rules=("TD706", "TD707")))
    if not seen and not found:
        reason = "not run: the ranks never formed a group" if not any(r.arrived for r in facts.ranks) else "not run"
        out.append(CheckResult(name="collectives", title="Collectives", status=Status.SKIPPED, detail=reason, rules=RULES["collectives"]))
    elif found:
        codes = ", ".join(sorted({f.rule for f in found}))
        out.append(CheckResult(name="collectives", title="Collectives", status=Status.of(found),
                               detail=f"see {codes} below", rules=RULES["collectives"]))
    return out


def _ranks_with(facts: DistFacts, backend: str, op: str) -> int:
    return sum(any((c.backend, c.op) == (backend, op) and c.ok for c in r.collectives) for r in facts.ranks)


def _cell(row: dict[str, Any]) -> str:
    seconds = row["seconds"]
    took = f"{seconds * 1e6:.0f} µs" if seconds < 1e-3 else f"{seconds * 1e3:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"
    if row["op"] == "barrier":
        return took
    bandwidth = f" {row['busbw_gbps']:.2f} GB/s" if "busbw_gbps" in row and row["bytes"] >= 65536 else ""
    return f"{human_bytes(row['bytes'])} {took}{bandwidth}"


def _check(group: str, detail: str, by_group: dict[str, list[Finding]], applicable: bool) -> CheckResult:
    found = by_group.get(group, [])
    return CheckResult(name=group, title=TITLES[group], status=Status.of(found, applicable), detail=detail, rules=RULES[group])


def _launch(facts: DistFacts) -> str:
    env = facts.launch
    how = "standalone" if facts.mode == "standalone" else "torchrun" if "TORCHELASTIC_RUN_ID" in env else "launcher"
    hosts = len({r.hostname for r in facts.ranks if r.hostname})
    parts = [f"{how}, world size {facts.world_size or env.get('WORLD_SIZE', '?')}",
             f"MASTER_ADDR:PORT {env.get('MASTER_ADDR', '?')}:{env.get('MASTER_PORT', '?')}"]
    if hosts:
        parts.append(f"{hosts} host{'s' if hosts != 1 else ''}")
    return " · ".join(parts)


def _rendezvous(facts: DistFacts) -> str:
    world = facts.world_size or len(facts.ranks)
    joined = sum(1 for r in facts.ranks if r.arrived)
    host = "the launcher's store" if facts.agent_store else "rank 0's TCPStore"
    timeout = facts.rendezvous_timeout or facts.timeout
    deadline = facts.rendezvous_deadline
    extended = deadline is not None and deadline > timeout + 0.05  # rank 0 imported torch late: it waited longer
    if extended:
        first = facts.rank(0)
        ready = f" at {first.ready_seconds:.1f} s" if first is not None and first.ready_seconds is not None else ""
        waited = (f"the {deadline:.1f} s rank 0 waited: the {timeout:g} s timeout, extended to {MIN_WAIT_AFTER_READY:g} s "
                  f"after rank 0 had imported torch{ready} (on a machine this slow to start, the other ranks may still be importing)")
    else:
        waited = f"the {timeout:g} s timeout"
    if joined < world or facts.rendezvous_seconds is None:
        return f"{joined}/{world} ranks joined {host} within {waited}"
    took = f"{joined}/{world} ranks joined {facts.rendezvous_seconds:.1f} s after start through {host}"
    return f"{took}, within {waited}" if extended else f"{took} (timeout {timeout:g} s)"


def _consistency(facts: DistFacts) -> str:
    ranks = [r for r in facts.ranks if r.torch]
    if not ranks:
        return "no rank described itself"
    builds = sorted({f"torch {r.torch}" + (f", CUDA {r.cuda}" if r.cuda else ", no CUDA") + (f", NCCL {r.nccl}" if r.nccl else "") for r in ranks})
    hosts: dict[str, list[int]] = defaultdict(list)
    for r in ranks:
        hosts[r.hostname or "?"].append(r.rank)
    layout = "; ".join(f"{host}: ranks {ranks_text(numbers)}" for host, numbers in sorted(hosts.items()))
    return " · ".join([" / ".join(builds), layout])


def _gpus(facts: DistFacts) -> str:
    ranks = [r for r in facts.ranks if r.torch]
    if not any(r.gpu_count for r in ranks):
        return "no GPU on any rank: gloo only"
    return "; ".join(f"rank {r.rank} → {r.device or 'no GPU'}" for r in ranks)
