"""The preflight from start to report: check the launch variables, run the ranks, judge."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from torchdoctor.core.report import Report
from torchdoctor.dist import coordinator, launch
from torchdoctor.dist.assemble import assemble
from torchdoctor.dist.facts import DistFacts, RankFacts
from torchdoctor.dist.summary import bandwidth_table, checks
from torchdoctor.dist.verdicts import judge_by_group, launch_problems
from torchdoctor.env.redact import redact_variables


def preflight(*, started: float, environ: Mapping[str, str], nproc: int | None, timeout: float, rendezvous: float,
              sizes: Sequence[int], backend: str = "auto", hang_rank: int | None = None) -> Report | None:
    """The report to print, or None for a launched rank other than 0 that has nothing of its own to say."""
    if nproc is not None:
        environments = coordinator.standalone_environments(nproc, launch.free_port(), environ)
        base = _base(environments[0], "standalone", timeout, rendezvous)
    else:
        environments = [dict(environ)]
        base = _base(environ, "launcher", timeout, rendezvous)
        if launch_problems(base) or base.master_resolves is False:
            return _report(base)
    plan = coordinator.Plan(environments=environments, deadline=started + rendezvous, rendezvous=rendezvous,
                            timeout=timeout, sizes=sizes, backend=backend, hang_rank=hang_rank)
    facts = assemble(base, coordinator.run(plan))
    own_rank = launch.integer(environ.get("RANK")) if nproc is None else 0
    if own_rank not in (0, None) and not _speaks_for_itself(facts.rank(own_rank)):
        return None
    return _report(facts)


def _base(environ: Mapping[str, str], mode: str, timeout: float, rendezvous: float) -> DistFacts:
    env = redact_variables(launch.launch_env(environ))
    addr = env.get("MASTER_ADDR")
    ips = launch.resolve(addr) if addr else None
    return DistFacts(
        mode=mode, launch=env, master_ips=ips or [], master_resolves=None if not addr else ips is not None,
        agent_store=env.get("TORCHELASTIC_USE_AGENT_STORE") == "True", world_size=launch.integer(env.get("WORLD_SIZE")),
        timeout=timeout, rendezvous_timeout=rendezvous,
    )


def _speaks_for_itself(rank: RankFacts | None) -> bool:
    """A rank other than 0 reports what rank 0 cannot know: it never reached the store, or it failed."""
    return rank is None or bool(rank.connect or rank.store_error or rank.error or rank.exit)


def _report(facts: DistFacts) -> Report:
    by_group = judge_by_group(facts)
    report = Report(command="dist")
    report.findings = [f for found in by_group.values() for f in found]
    report.checks = checks(facts, by_group)
    world = facts.world_size or len(facts.ranks)
    how = "standalone" if facts.mode == "standalone" else f"rank {facts.launch.get('RANK', '?')} of a launched job"
    report.title = f"torchdoctor dist: {world} rank{'s' if world != 1 else ''}, {how}"
    report.sections["distributed"] = {**facts.to_dict(), "bandwidth": bandwidth_table(facts)}
    return report
