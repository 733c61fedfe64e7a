"""Verdicts on a preflight: facts in, findings out (each finding says which rank, when one)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator

from torchdoctor.core.finding import Finding
from torchdoctor.core.wording import ranks_named
from torchdoctor.core.wording import ranks_text
from torchdoctor.core.wording import listing
from torchdoctor.dist import slurm
from torchdoctor.dist.facts import DistFacts, RankFacts
from torchdoctor.dist.launch import REQUIRED, integer, is_loopback
from torchdoctor.dist.network import split_address
from torchdoctor.rules.distributed.collective_timeout import RULE as COLLECTIVE_TIMEOUT
from torchdoctor.rules.distributed.collective_wrong_result import RULE as WRONG_RESULT
from torchdoctor.rules.distributed.gpu_shared_by_ranks import RULE as GPU_SHARED
from torchdoctor.rules.distributed.hostname_resolves_to_loopback import RULE as HOSTNAME_LOOPBACK
from torchdoctor.rules.distributed.launch_environment_invalid import RULE as LAUNCH_INVALID
from torchdoctor.rules.distributed.launch_variables_disagree import RULE as VARIABLES_DISAGREE
from torchdoctor.rules.distributed.local_rank_layout_invalid import RULE as LOCAL_LAYOUT
from torchdoctor.rules.distributed.loopback_master_addr_multi_node import RULE as LOOPBACK
from torchdoctor.rules.distributed.master_addr_not_in_slurm_nodes import RULE as MASTER_OUTSIDE_SLURM
from torchdoctor.rules.distributed.master_addr_not_rank0_host import RULE as MASTER_ELSEWHERE
from torchdoctor.rules.distributed.master_port_in_use import RULE as PORT_IN_USE
from torchdoctor.rules.distributed.master_unreachable import RULE as UNREACHABLE
from torchdoctor.rules.distributed.node_address_unreachable import RULE as NODE_UNREACHABLE
from torchdoctor.rules.distributed.rank_never_arrived import RULE as NEVER_ARRIVED
from torchdoctor.rules.distributed.rank_process_failed import RULE as RANK_FAILED
from torchdoctor.rules.distributed.same_rng_state_across_ranks import RULE as SAME_RNG
from torchdoctor.rules.distributed.slurm_tasks_mismatch import RULE as SLURM_TASKS
from torchdoctor.rules.distributed.socket_interface_missing import RULE as SOCKET_INTERFACE
from torchdoctor.rules.distributed.versions_differ_across_ranks import RULE as VERSIONS_DIFFER

Verdict = Callable[[DistFacts], Iterable[Finding]]


# -- before any process starts ---------------------------------------------------------------
def launch_problems(facts: DistFacts) -> list[str]:
    env = facts.launch
    if facts.mode == "standalone" or not env:  # no launch variables collected: nothing to judge
        return []
    problems = []
    missing = [name for name in REQUIRED if not env.get(name)]
    if missing:
        problems.append(f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not set")
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_PORT"):
        if env.get(name) and integer(env[name]) is None:
            problems.append(f"{name}={env[name]!r} is not an integer")
    rank, world = integer(env.get("RANK")), integer(env.get("WORLD_SIZE"))
    local, local_world = integer(env.get("LOCAL_RANK")), integer(env.get("LOCAL_WORLD_SIZE"))
    port = integer(env.get("MASTER_PORT"))
    if world is not None and world < 1:
        problems.append(f"WORLD_SIZE={world} must be at least 1")
    elif rank is not None and world is not None and not 0 <= rank < world:
        problems.append(f"RANK={rank} is outside 0..{world - 1} (WORLD_SIZE={world})")
    if local is not None and local_world is not None and not 0 <= local < local_world:
        problems.append(f"LOCAL_RANK={local} is outside 0..{local_world - 1} (LOCAL_WORLD_SIZE={local_world})")
    if local_world is not None and world is not None and local_world > world:
        problems.append(f"LOCAL_WORLD_SIZE={local_world} is larger than WORLD_SIZE={world}")
    if port is not None and not 1 <= port <= 65535:
        problems.append(f"MASTER_PORT={port} is not a TCP port (1-65535)")
    if env.get("MASTER_ADDR") and facts.master_resolves is False:
        problems.append(f"MASTER_ADDR={env['MASTER_ADDR']!r} does not resolve to an address on this host")
    return problems


def launch_invalid(facts: DistFacts) -> Iterator[Finding]:
    problems = launch_problems(facts)
    if problems:
        yield LAUNCH_INVALID.finding(fields={"problems": "; ".join(problems)}, rank=integer(facts.launch.get("RANK")),
                                     evidence={"launch": facts.launch})


def spans_hosts(facts: DistFacts) -> bool:
    """The job runs on several hosts: its ranks say so, or (when not every rank described itself)
    the launcher does (fewer ranks on this node than in the job)."""
    env = facts.launch
    world, local_world = integer(env.get("WORLD_SIZE")), integer(env.get("LOCAL_WORLD_SIZE"))
    described = [r for r in facts.ranks if r.hostname]
    hosts = {r.hostname for r in described}
    if len(hosts) > 1:
        return True
    if world is not None and len({r.rank for r in described}) >= world:
        return False  # every rank is on this one host (several nodes simulated on one machine)
    return world is not None and local_world is not None and world > local_world


def loopback_master(facts: DistFacts) -> Iterator[Finding]:
    env = facts.launch
    world, local_world = integer(env.get("WORLD_SIZE")), integer(env.get("LOCAL_WORLD_SIZE"))
    if facts.mode == "standalone" or not spans_hosts(facts) or not facts.master_ips:
        return
    if all(is_loopback(ip) for ip in facts.master_ips):
        yield LOOPBACK.finding(fields={"addr": env.get("MASTER_ADDR"), "ips": ", ".join(facts.master_ips),
                                       "world": world, "local_world": local_world}, rank=integer(env.get("RANK")))


def master_outside_slurm(facts: DistFacts) -> Iterator[Finding]:
    """MASTER_ADDR, set by the job, names no node of the SLURM step (by name, or by address:
    a node's other names resolve to its addresses)."""
    addr = facts.launch.get("MASTER_ADDR")
    if not addr or not facts.slurm_nodes or "MASTER_ADDR" in facts.derived:
        return
    if not facts.master_ips or all(is_loopback(ip) for ip in facts.master_ips):
        return  # it does not resolve (TD700), or a loopback address: TD701's story in a multi-node job
    names = {name.lower() for node in facts.slurm_nodes for name in (node, node.split(".")[0])}
    if addr.lower() in names or addr.lower().split(".")[0] in names:
        return
    zero = facts.rank(0)
    known = set(facts.slurm_node_ips) | set(zero.local_ips if zero is not None else ())
    if not facts.slurm_node_ips or set(facts.master_ips) & known:
        return  # the nodes' addresses are not known (no verdict), or MASTER_ADDR is one of them
    yield MASTER_OUTSIDE_SLURM.finding(
        fields={"addr": addr, "nodes": listing(facts.slurm_nodes, 4), "ips": ", ".join(facts.master_ips),
                "first": facts.slurm_nodes[0]},
        rank=integer(facts.launch.get("RANK")),
        evidence={"master_ips": facts.master_ips, "slurm_nodes": facts.slurm_nodes[:64]},
    )


def slurm_tasks(facts: DistFacts) -> Iterator[Finding]:
    """What srun started against what torch.distributed is told (see slurm.py)."""
    env = facts.launch
    if facts.mode == "standalone" or not slurm.in_step(env):
        return
    here = slurm.tasks_here(env)
    problems = []
    variant = None
    if "TORCHELASTIC_RUN_ID" in env:
        local = integer(env.get("LOCAL_WORLD_SIZE"))
        if here is not None and here > 1:
            each = f" of {local} ranks each: {here * local} processes on the node" if local else ""
            problems.append(f"srun started {here} tasks on this node and each runs its own torchrun{each}")
        variant = "torchrun-per-task"
    else:
        pairs = (("WORLD_SIZE", env.get("SLURM_STEP_NUM_TASKS"), "the step's tasks (SLURM_STEP_NUM_TASKS)"),
                 ("RANK", env.get("SLURM_PROCID"), "SLURM_PROCID"), ("LOCAL_RANK", env.get("SLURM_LOCALID"), "SLURM_LOCALID"),
                 ("LOCAL_WORLD_SIZE", str(here) if here is not None else None, "the step's tasks on this node"))
        for name, expected, what in pairs:
            if name in env and name not in facts.derived and expected is not None and integer(env[name]) != integer(expected):
                problems.append(f"{name}={env[name]} but {what} is {expected}")
    if problems:
        yield SLURM_TASKS.finding(fields={"problems": "; ".join(problems)}, variant=variant, rank=integer(env.get("RANK")),
                                  evidence={name: env[name] for name in slurm.VARIABLES if name in env})


# -- rendezvous ------------------------------------------------------------------------------
def port_in_use(facts: DistFacts) -> Iterator[Finding]:
    for r in facts.ranks:
        if r.connect == "in use":
            yield PORT_IN_USE.finding(fields={"master": r.master, "error": r.store_error,
                                              "host": r.hostname or "the master"}, rank=r.rank)


def unreachable(facts: DistFacts) -> Iterator[Finding]:
    for r in facts.ranks:
        if r.connect is not None and r.connect != "in use":
            yield UNREACHABLE.finding(fields={"error": r.store_error, "host": r.hostname or "?", "rank_": r.rank},
                                      rank=r.rank, evidence={"connect": r.connect})


def never_arrived(facts: DistFacts) -> Iterator[Finding]:
    explained = {r.rank for r in facts.ranks if r.connect or r.exit or r.error}
    missing = [m for m in facts.missing if m not in explained]
    if not missing:
        return
    zero = facts.rank(0)
    master = zero.master if zero else facts.launch.get("MASTER_ADDR")
    arrived = (facts.world_size or 0) - len(facts.missing)
    yield NEVER_ARRIVED.finding(
        fields={"which": ranks_named(missing), "arrived": arrived, "world": facts.world_size, "master": master,
                "seconds": f"{facts.rendezvous_seconds or facts.rendezvous_timeout or facts.timeout:.0f}"},
        evidence={"missing": missing},
    )


def variables_disagree(facts: DistFacts) -> Iterator[Finding]:
    arrived = [r for r in facts.ranks if r.arrived]
    for field, name in (("world_size", "WORLD_SIZE"), ("master", "MASTER_ADDR:MASTER_PORT"), ("local_world_size", "LOCAL_WORLD_SIZE")):
        values: dict[object, list[int]] = defaultdict(list)
        for r in arrived:
            if getattr(r, field) is not None:
                values[getattr(r, field)].append(r.rank)
        if field == "local_world_size":
            values = _per_host_disagreement(arrived)
        if len(values) > 1:
            said = "; ".join(f"{ranks_named(ranks)}: {value}" for value, ranks in sorted(values.items(), key=lambda kv: kv[1]))
            yield VARIABLES_DISAGREE.finding(fields={"name": name, "said": said})
    for r in facts.ranks:
        if r.duplicates > 1:
            yield VARIABLES_DISAGREE.finding(variant="rank-claimed-twice", fields={"count": r.duplicates, "rank": r.rank},
                                             rank=r.rank)


def _per_host_disagreement(ranks: list[RankFacts]) -> dict[object, list[int]]:
    """LOCAL_WORLD_SIZE only has to agree among the ranks of one node."""
    by_node: dict[tuple[str, str | None], dict[object, list[int]]] = defaultdict(lambda: defaultdict(list))
    for r in ranks:
        if r.local_world_size is not None and r.hostname:
            by_node[node_of(r)][r.local_world_size].append(r.rank)  # type: ignore[index]
    return next((values for values in by_node.values() if len(values) > 1), {})


# -- the nodes' addresses --------------------------------------------------------------------
def node_of(r: RankFacts) -> tuple[str | None, str | None]:
    """A node: its host, and the node number its launcher gave it (several on one host are several nodes)."""
    return (r.hostname, r.node)


def hostname_loopback(facts: DistFacts) -> Iterator[Finding]:
    if not spans_hosts(facts):
        return
    by_host: dict[str, list[RankFacts]] = defaultdict(list)
    for r in facts.ranks:
        if r.hostname and r.host_ips and is_loopback(r.host_ips[0]) and "GLOO_SOCKET_IFNAME" not in r.socket_ifname:
            by_host[r.hostname].append(r)
    for host, ranks in sorted(by_host.items()):
        numbers = [r.rank for r in ranks]
        yield HOSTNAME_LOOPBACK.finding(fields={"which": ranks_named(numbers), "host": host,
                                                "ips": ", ".join(ranks[0].host_ips)},
                                        rank=numbers[0] if len(numbers) == 1 else None,
                                        evidence={"ranks": numbers, "host_ips": ranks[0].host_ips})


def master_elsewhere(facts: DistFacts) -> Iterator[Finding]:
    zero = facts.rank(0)
    if zero is None or not zero.master_resolved or not zero.local_ips or next(master_outside_slurm(facts), None):
        return
    if any(is_loopback(ip) or ip in zero.local_ips for ip in zero.master_resolved):
        return
    addr = facts.launch.get("MASTER_ADDR") or (zero.master or "?").rsplit(":", 1)[0]
    local = [ip for ip in zero.local_ips if not is_loopback(ip)]
    fields = {"addr": addr, "ips": ", ".join(zero.master_resolved), "host": zero.hostname or "rank 0's host"}
    if local:
        yield MASTER_ELSEWHERE.finding(fields={**fields, "local": listing(local, 4)}, rank=0)
    else:
        yield MASTER_ELSEWHERE.finding(variant="loopback-only", fields=fields, rank=0)


def nodes_unreachable(facts: DistFacts) -> Iterator[Finding]:
    explained = {r.rank for f in hostname_loopback(facts) for r in facts.ranks if r.rank in f.evidence["ranks"]}  # type: ignore[index]
    failed: dict[tuple[int, str, str, str], list[int]] = defaultdict(list)
    for r in facts.ranks:
        for attempt in r.reach:
            if attempt.get("problem") and not (int(attempt["to"]) in explained and is_loopback(split_address(attempt["address"])[0])):
                failed[(int(attempt["to"]), attempt["address"], attempt["via"], attempt["problem"])].append(r.rank)
    for (to, address, via, problem), ranks in sorted(failed.items()):
        target = facts.rank(to)
        known = problem in NODE_UNREACHABLE.variants  # a kind of failure the rule words
        yield NODE_UNREACHABLE.finding(fields={"who": ranks_named(ranks) + _on_hosts(facts, ranks),
                                               "target": f"rank {to}'s node" + (f" ({target.hostname})" if target and target.hostname else ""),
                                               "address": address, "via": via, **({} if known else {"problem": problem})},
                                       variant=problem if known else None,
                                       rank=ranks[0] if len(ranks) == 1 else None,
                                       evidence={"from": ranks, "to": to, "problem": problem})


def _on_hosts(facts: DistFacts, ranks: list[int]) -> str:
    hosts = sorted({r.hostname for r in facts.ranks if r.rank in ranks and r.hostname})
    return f" on {', '.join(hosts)}" if hosts else ""


def _unreachable_ranks(facts: DistFacts) -> set[int]:
    """Ranks whose node could not be reached, or could not reach another (their process group may fail for it)."""
    found = set()
    for r in facts.ranks:
        for attempt in r.reach:
            if attempt.get("problem"):
                found |= {r.rank, int(attempt["to"])}
    return found


# -- collectives -----------------------------------------------------------------------------
def wrong_results(facts: DistFacts) -> Iterator[Finding]:
    by_label: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for r in facts.ranks:
        for c in r.collectives:
            if c.problem == "wrong":
                by_label[c.label].append((r.rank, c.detail or ""))
    for label, wrong in by_label.items():
        yield WRONG_RESULT.finding(fields={"label": label, "which": ranks_named(rank for rank, _ in wrong),
                                           "detail": wrong[0][1]}, rank=wrong[0][0] if len(wrong) == 1 else None)


def stuck_collective(facts: DistFacts) -> Finding | None:
    """The collective that did not complete, with where every rank was."""
    timed_out = [(r, c) for r in facts.ranks for c in r.collectives if c.problem == "timeout"]
    stuck = [r for r in facts.ranks if r.position]
    if not timed_out and not stuck:
        return None
    label = timed_out[0][1].label if timed_out else stuck[0].position
    inside = sorted({r.rank for r, c in timed_out if c.label == label} | {r.rank for r in stuck if r.position == label})
    others = []
    for r in facts.ranks:
        if r.rank in inside or r.arrived is False:
            continue
        if r.position:
            where = f"was in {r.position}"
        elif r.last_completed:
            where = f"never entered it (last completed: {r.last_completed})"
        else:
            where = "never entered any collective"
        if r.exit:
            where += f" ({r.exit})"
        others.append(f"rank {r.rank} {where}")
    elsewhere = "; ".join(others) if others else "every rank was in it"
    return COLLECTIVE_TIMEOUT.finding(
        fields={"label": label, "seconds": f"{facts.timeout:g}", "inside": ranks_named(inside),
                "elsewhere": elsewhere}, evidence={"collective": label, "ranks_in_it": inside, "elsewhere": others},
    )


def collective_timeout(facts: DistFacts) -> Iterator[Finding]:
    finding = stuck_collective(facts)
    if finding is not None:
        yield finding


def rank_failed(facts: DistFacts) -> Iterator[Finding]:
    """One finding per distinct failure, naming every rank that had it."""
    stuck = stuck_collective(facts) is not None
    explained = {r.rank for r in facts.ranks if _interface_problems(r)} | _unreachable_ranks(facts)
    if any(True for _ in hostname_loopback(facts)):
        explained |= {r.rank for r in facts.ranks}
    failures: dict[str, list[int]] = defaultdict(list)
    for r in facts.ranks:
        if r.error and r.rank not in explained:
            failures[f"failed in {r.error}"].append(r.rank)
        elif r.exit and r.rank not in explained and not (stuck and r.exit.startswith("stopped")) and not r.connect:
            failures[r.exit].append(r.rank)
    for what, ranks in failures.items():
        yield RANK_FAILED.finding(fields={"what": what, "who": ranks_named(ranks)},
                                  rank=ranks[0] if len(ranks) == 1 else None)


# -- consistency -----------------------------------------------------------------------------
def versions_differ(facts: DistFacts) -> Iterator[Finding]:
    for field, name in (("torch", "torch"), ("cuda", "CUDA"), ("nccl", "NCCL"), ("python", "Python")):
        values: dict[str, list[int]] = defaultdict(list)
        for r in facts.ranks:
            if r.arrived is not False and r.torch is not None:
                values[str(getattr(r, field))].append(r.rank)
        if len(values) > 1:
            said = "; ".join(f"{ranks_named(ranks)}: {value}" for value, ranks in sorted(values.items(), key=lambda kv: kv[1]))
            yield VERSIONS_DIFFER.finding(fields={"what": name, "said": said})


def local_layout(facts: DistFacts) -> Iterator[Finding]:
    by_node: dict[tuple[str, str | None], list[RankFacts]] = defaultdict(list)
    for r in facts.ranks:
        if r.hostname and r.local_rank is not None:
            by_node[(r.hostname, r.node)].append(r)
    several = len({node[0] for node in by_node}) < len(by_node)  # several nodes on one host (a test, a VM)
    for (hostname, node), ranks in sorted(by_node.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
        host = f"{hostname} (node {node})" if several and node is not None else hostname
        seen: dict[int, list[int]] = defaultdict(list)
        for r in ranks:
            seen[r.local_rank].append(r.rank)  # type: ignore[index]
        for local, claimed in sorted(seen.items()):
            if len(claimed) > 1:
                yield LOCAL_LAYOUT.finding(fields={"ranks": ranks_named(claimed), "host": host, "local": local})
        sizes = {r.local_world_size for r in ranks if r.local_world_size is not None}
        if len(sizes) == 1 and not facts.missing and len(ranks) != next(iter(sizes)):
            yield LOCAL_LAYOUT.finding(variant="local-world-size",
                                       fields={"host": host, "count": len(ranks), "ranks": ranks_named(r.rank for r in ranks),
                                               "size": next(iter(sizes))})


def gpu_mapping(facts: DistFacts) -> Iterator[Finding]:
    by_device: dict[tuple[str, str], list[int]] = defaultdict(list)
    for r in facts.ranks:
        if r.hostname and r.device:
            by_device[(r.hostname, r.device)].append(r.rank)
        if r.gpu_count and r.gpu_count > 1 and r.local_rank is not None and r.local_rank >= r.gpu_count:
            yield GPU_SHARED.finding(variant="no-such-gpu", fields={"rank": r.rank, "local": r.local_rank, "gpus": r.gpu_count},
                                     rank=r.rank)
    for (host, device), ranks in sorted(by_device.items()):
        if len(ranks) > 1:
            yield GPU_SHARED.finding(fields={"ranks": ranks_named(ranks), "host": host, "device": device})


def same_rng(facts: DistFacts) -> Iterator[Finding]:
    states = [r.rng for r in facts.ranks if r.arrived is not False]
    if len(states) >= 2 and all(states) and len(set(states)) == 1:
        yield SAME_RNG.finding(fields={"count_ranks": len(states)})


def _interface_problems(r: RankFacts) -> list[tuple[str, str, tuple[str, tuple[str, ...]]]]:
    if not r.interfaces:
        return []
    found = [(variable, value, interface_problem(variable, value, r.interfaces)) for variable, value in sorted(r.socket_ifname.items())]
    return [(variable, value, problem) for variable, value, problem in found if problem]


def socket_interfaces(facts: DistFacts) -> Iterator[Finding]:
    seen: dict[tuple[str, str, str, tuple[str, tuple[str, ...]], str], list[int]] = defaultdict(list)
    for r in facts.ranks:
        for variable, value, problem in _interface_problems(r):
            seen[(r.hostname or "?", variable, value, problem, ", ".join(r.interfaces))].append(r.rank)
    for (host, variable, value, (kind, names), interfaces), ranks in seen.items():
        fields = {"variable": variable, "value": value, "host": host, "interfaces": interfaces}
        if kind == "absent":
            fields |= {"absent": ", ".join(names), "verb": "does" if len(names) == 1 else "do"}
        else:
            fields["prefixes"] = " or ".join(repr(n) for n in names)
        yield SOCKET_INTERFACE.finding(fields=fields, variant=None if kind == "absent" else kind,
                                       rank=ranks[0] if len(ranks) == 1 else None)


def interface_problem(variable: str, value: str, interfaces: list[str]) -> tuple[str, tuple[str, ...]] | None:
    """What is wrong with a socket-interface variable, and the names at fault: ("absent", names)
    or ("no-prefix", names); None when nothing is. GLOO_SOCKET_IFNAME lists exact names;
    NCCL_SOCKET_IFNAME prefixes, `=` exact names, `^` exclusions."""
    names = [v.strip() for v in value.lstrip("=^").split(",") if v.strip()]
    if not names or value.startswith("^"):
        return None
    if variable.startswith("GLOO") or value.startswith("="):
        absent = tuple(n for n in names if n not in interfaces)
        return ("absent", absent) if absent else None
    if not any(i.startswith(n) for n in names for i in interfaces):
        return "no-prefix", tuple(names)
    return None


#: probe group -> verdicts; the text report lists the groups in this order
VERDICTS: dict[str, tuple[Verdict, ...]] = {
    "launch": (launch_invalid, loopback_master, socket_interfaces, master_outside_slurm, slurm_tasks),
    "rendezvous": (port_in_use, unreachable, never_arrived, variables_disagree),
    "network": (hostname_loopback, master_elsewhere, nodes_unreachable),
    "consistency": (versions_differ, local_layout, same_rng),
    "gpus": (gpu_mapping,),
    "collectives": (wrong_results, collective_timeout, rank_failed),
}
RULES: dict[str, tuple[str, ...]] = {
    "launch": ("TD700", "TD701", "TD713", "TD714", "TD715"),
    "rendezvous": ("TD702", "TD703", "TD704", "TD705"),
    "network": ("TD716", "TD717", "TD718"),
    "consistency": ("TD708", "TD709", "TD711"),
    "gpus": ("TD710",),
    "collectives": ("TD706", "TD707", "TD712"),
}


def judge_by_group(facts: DistFacts) -> dict[str, list[Finding]]:
    return {group: [f for verdict in verdicts for f in verdict(facts)] for group, verdicts in VERDICTS.items()}


def judge(facts: DistFacts) -> list[Finding]:
    return [f for found in judge_by_group(facts).values() for f in found]
