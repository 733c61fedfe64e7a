"""The preflight from start to report: check the launch variables, run the ranks, judge."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

from torchdoctor.core.report import Report
from torchdoctor.dist import coordinator, launch, network, slurm
from torchdoctor.dist.assemble import assemble
from torchdoctor.dist.facts import DistFacts, RankFacts
from torchdoctor.dist.summary import bandwidth_table, checks
from torchdoctor.dist.verdicts import judge_by_group, launch_problems
from torchdoctor.env.redact import redact_variables


def preflight(*, started: float, environ: Mapping[str, str], nproc: int | None, timeout: float, rendezvous: float,
              sizes: Sequence[int], backend: str = "auto", hang_rank: int | None = None,
              nodes: tuple[int, int, str, int] | None = None, derived: Sequence[str] = ()) -> Report | None:
    """The report to print, or None for a launched rank (or node) other than 0's that has nothing of
    its own to say. `nodes`: (nodes, this node, master host, port) of `--nnodes`; `derived`: the
    launch variables filled from SLURM's (slurm.py)."""
    own: list[int] | None = None  # the ranks this process started, when it is not the whole job
    if nodes is not None:
        assert nproc is not None
        environments = coordinator.node_environments(*nodes, nproc=nproc, base=environ)
        own = [int(env["RANK"]) for env in environments]
        base = _base(environments[0], "nodes", timeout, rendezvous)
    elif nproc is not None:
        environments = coordinator.standalone_environments(nproc, launch.free_port(), environ)
        base = _base(environments[0], "standalone", timeout, rendezvous)
    else:
        environments = [dict(environ)]
        own = [launch.integer(environ.get("RANK")) or 0]
        base = _base(environ, "launcher", timeout, rendezvous, derived)
        if launch_problems(base) or base.master_resolves is False:
            return _report(base)
    plan = coordinator.Plan(environments=environments, deadline=started + rendezvous, rendezvous=rendezvous,
                            timeout=timeout, sizes=sizes, backend=backend, hang_rank=hang_rank)
    facts = assemble(base, coordinator.run(plan))
    if own is not None and 0 not in own and not any(_speaks_for_itself(facts.rank(rank)) for rank in own):
        return None
    return _report(facts)


def _base(environ: Mapping[str, str], mode: str, timeout: float, rendezvous: float, derived: Sequence[str] = ()) -> DistFacts:
    env = redact_variables(launch.launch_env(environ))
    addr = env.get("MASTER_ADDR")
    ips = launch.resolve(addr) if addr else None
    names = slurm.nodes(environ)
    return DistFacts(
        mode=mode, launch=env, master_ips=ips or [], master_resolves=None if not addr else ips is not None,
        agent_store=env.get("TORCHELASTIC_USE_AGENT_STORE") == "True", world_size=launch.integer(env.get("WORLD_SIZE")),
        timeout=timeout, rendezvous_timeout=rendezvous, derived=list(derived), slurm_nodes=names,
        slurm_node_ips=_addresses_of(names) if addr and ips and names and not _named(addr, names) else [],
        local_ips=network.local_ips(),
    )


def _named(addr: str, names: Sequence[str]) -> bool:
    short = {n.lower().split(".")[0] for n in names} | {n.lower() for n in names}
    return addr.lower() in short or addr.lower().split(".")[0] in short


def _addresses_of(names: Sequence[str], most: int = 64) -> list[str]:
    """The addresses of SLURM's nodes (at most `most` of them, looked up together: 3 s at most)."""
    with ThreadPoolExecutor(max_workers=16) as pool:
        found = pool.map(launch.resolve, names[:most])
        return sorted({ip for ips in found if ips for ip in ips})


def _speaks_for_itself(rank: RankFacts | None) -> bool:
    """A rank other than 0 reports what rank 0 cannot know: it never reached the store, or it failed."""
    return rank is None or bool(rank.connect or rank.store_error or rank.error or rank.exit)


def _report(facts: DistFacts) -> Report:
    by_group = judge_by_group(facts)
    report = Report(command="dist")
    report.findings = [f for found in by_group.values() for f in found]
    report.checks = checks(facts, by_group)
    world = facts.world_size or len(facts.ranks)
    how = {"standalone": "standalone", "nodes": f"node {facts.launch.get('GROUP_RANK', '?')} of a job on several nodes"}.get(
        facts.mode, f"rank {facts.launch.get('RANK', '?')} of a launched job")
    report.title = f"torchdoctor dist: {world} rank{'s' if world != 1 else ''}, {how}"
    report.sections["distributed"] = {**facts.to_dict(), "bandwidth": bandwidth_table(facts)}
    return report
