"""`torchdoctor dist` on several nodes, for real: two `--nnodes 2` processes on 127.0.0.1, two
torchrun agents with `--nnodes 2` (c10d rendezvous), two srun-like tasks that only have SLURM's
variables, and two hosts made of network namespaces (a healthy pair, a host whose name resolves
to 127.0.1.1, an interface that does not route to the other host). Only rank 0's node prints
the report; the other prints only what rank 0 cannot know."""

from __future__ import annotations

import json
import os
import sys

import pytest

from tests.dist import netns
from tests.dist.test_command import dist
from tests.dist.netns import PYTHON, run_both
from torchdoctor.dist.launch import free_port

pytestmark = pytest.mark.slow

QUICK = ("--sizes", "1K,64K", "--format", "json")


def both(commands: list[list[str]], env: dict[str, str] | None = None, *, alone: bool = True) -> tuple[dict, list]:  # type: ignore[type-arg]
    """Run the nodes; the report of rank 0's node, and the processes. `alone`: no other node printed
    a report of its own (it had nothing to say that rank 0 could not)."""
    base = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK")}
    done = run_both(commands, env={**base, "OMP_NUM_THREADS": "1", **(env or {})})
    printed = [json.loads(d.stdout) for d in done if d.stdout.strip()]
    assert printed and (len(printed) == 1 or not alone), [d.stdout[-500:] for d in done]
    return next(r for r in printed if r["meta"]["title"].endswith((", node 0 of a job on several nodes", ", rank 0 of a launched job"))), done


def titles(report: dict) -> set[str]:  # type: ignore[type-arg]
    return {c["title"] for c in report["checks"]}


def test_two_nodes_started_with_nnodes_node_rank_and_master() -> None:
    port = free_port()
    report, done = both([[*PYTHON, "--nnodes", "2", "--node-rank", str(k), "--master", f"127.0.0.1:{port}", "--nproc", "2", *QUICK]
                         for k in (0, 1)])
    assert [d.returncode for d in done] == [0, 0] and report["findings"] == []
    assert report["meta"]["title"] == "torchdoctor dist: 4 ranks, node 0 of a job on several nodes"
    facts = report["distributed"]
    assert [(r["rank"], r["node"], r["local_rank"]) for r in facts["ranks"]] == [(0, "0", 0), (1, "0", 1), (2, "1", 0), (3, "1", 1)]
    assert {"all_reduce · gloo · inter-node", "all_reduce · gloo · intra-node", "Node addresses"} <= titles(report)
    scopes = {(row.get("scope", "world"), row["bytes"]) for row in facts["bandwidth"] if row["op"] == "all_reduce"}
    assert {("world", 1024), ("inter-node", 65536), ("intra-node", 65536)} <= scopes
    reach = [a for r in facts["ranks"] for a in r["reach"]]
    assert sorted(a["to"] for a in reach) == [0, 2] and not any(a["problem"] for a in reach)  # node 0 and node 1 knocked on each other


def test_two_torchrun_agents_with_nnodes_2() -> None:
    port = free_port()
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "2", "--nproc-per-node", "1", "--rdzv-backend", "c10d",
                "--rdzv-endpoint", f"127.0.0.1:{port}", "--rdzv-id", f"td{port}", "-m", "torchdoctor", "dist", *QUICK]
    report, done = both([torchrun, torchrun])
    assert [d.returncode for d in done] == [0, 0] and report["findings"] == [], report["findings"]
    assert [r["node"] for r in report["distributed"]["ranks"]] == ["0", "1"]  # torchrun's GROUP_RANK
    assert "all_reduce · gloo · inter-node" in titles(report)


def test_srun_tasks_with_only_slurms_variables() -> None:
    port = free_port()
    task = {"SLURM_JOB_ID": "4242", "SLURM_STEP_ID": "0", "SLURM_STEP_NUM_TASKS": "2", "SLURM_NTASKS": "2",
            "SLURM_STEP_TASKS_PER_NODE": "2", "SLURM_STEP_NODELIST": "localhost", "SLURM_NODEID": "0", "MASTER_PORT": str(port)}
    commands = [["env", f"SLURM_PROCID={k}", f"SLURM_LOCALID={k}", *PYTHON, *QUICK] for k in (0, 1)]
    report, done = both(commands, env=task)
    assert [d.returncode for d in done] == [0, 0] and report["findings"] == [], report["findings"]
    assert report["distributed"]["derived"] == ["RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR"]
    launch = next(c for c in report["checks"] if c["title"] == "Launch environment")
    assert launch["detail"].startswith("srun (from SLURM: RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR), world size 2")


needs_netns = pytest.mark.skipif(not netns.available(), reason="network namespaces need root and iproute2 (`ip netns`)")


def on_hosts(a: netns.Host, b: netns.Host, envs: tuple[dict[str, str], dict[str, str]] = ({}, {}), *, alone: bool = True) -> tuple[dict, list]:  # type: ignore[type-arg]
    port = free_port()
    return both(alone=alone, commands=[host.command([*PYTHON, "--nnodes", "2", "--node-rank", str(k), "--master", f"{a.address}:{port}", "--nproc", "1",
                               "--timeout", "5", *QUICK], {"OMP_NUM_THREADS": "1", **env})
                 for k, (host, env) in enumerate(zip((a, b), envs))])


@needs_netns
def test_two_hosts_that_reach_each_other() -> None:
    with netns.two_hosts() as (a, b):
        report, done = on_hosts(a, b)
    assert [d.returncode for d in done] == [0, 0] and report["findings"] == [], report["findings"]
    facts = report["distributed"]
    assert [r["hostname"] for r in facts["ranks"]] == ["node-a", "node-b"]
    assert [p["address"].split(":")[0] for r in facts["ranks"] for p in r["probes"]] == [a.address, b.address]
    assert "all_reduce · gloo · inter-node" in titles(report)


@needs_netns
def test_a_host_whose_name_resolves_to_a_loopback_address_and_its_fix() -> None:
    with netns.two_hosts(loopback_name=True) as (a, b):
        report, _ = on_hosts(a, b, alone=False)  # node 1's rank fails in init_process_group: it says so itself
        fixed, done = on_hosts(a, b, ({"GLOO_SOCKET_IFNAME": a.link}, {"GLOO_SOCKET_IFNAME": b.link}))
    (finding,) = report["findings"]  # the process group's failure, and node 0 refused at 127.0.1.1, are its consequences
    assert finding["rule"] == "TD716", report["findings"]
    assert finding["message"].startswith("rank 1 on node-b: the host name node-b resolves to 127.0.1.1 there")
    assert [d.returncode for d in done] == [0, 0] and fixed["findings"] == [], fixed["findings"]


@needs_netns
def test_an_interface_that_does_not_route_to_the_other_host() -> None:
    with netns.two_hosts() as (a, b):
        report, _ = on_hosts(a, b, ({"GLOO_SOCKET_IFNAME": a.side_link}, {"GLOO_SOCKET_IFNAME": b.side_link}), alone=False)
    unreachable = [f for f in report["findings"] if f["rule"] == "TD718"]
    assert unreachable, report["findings"]
    assert f"at {b.side}:" in unreachable[0]["message"] or f"at {a.side}:" in unreachable[0]["message"]
    assert f"the address GLOO_SOCKET_IFNAME={a.side_link} picks there" in " ".join(f["message"] for f in unreachable) or \
        f"the address GLOO_SOCKET_IFNAME={b.side_link} picks there" in " ".join(f["message"] for f in unreachable)
    assert "TD712" not in [f["rule"] for f in report["findings"]]
