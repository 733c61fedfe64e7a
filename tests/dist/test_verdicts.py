"""Each dist verdict on both sides, on facts written by hand."""

from __future__ import annotations

import json
from typing import Any

import pytest

from torchdoctor.dist.facts import load
from torchdoctor.dist.verdicts import RULES, VERDICTS, interface_problem, judge, launch_problems

LAUNCH = {"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "node-0", "MASTER_PORT": "29500"}


def facts(**data: Any):  # noqa: ANN201
    return load(json.loads(json.dumps(data)))


def rank(number: int, **data: Any) -> dict[str, Any]:
    base = {"rank": number, "hostname": "node-0", "arrived": True, "torch": "2.5.1", "cuda": None,
            "python": "3.11.9", "world_size": 2, "master": "node-0:29500", "local_rank": number,
            "local_world_size": 2, "rng": f"rng{number}"}
    return {**base, **data}


def codes(**data: Any) -> list[str]:
    return sorted(f.rule for f in judge(facts(**data)))


def test_a_healthy_job_has_no_finding() -> None:
    ok = {"op": "all_reduce", "bytes": 1024, "ok": True, "seconds": 0.001}
    assert codes(mode="launcher", launch=LAUNCH, master_ips=["10.0.0.1"], master_resolves=True, world_size=2,
                 ranks=[rank(0, collectives=[ok]), rank(1, collectives=[ok])]) == []


def test_rule_groups_cover_the_range() -> None:
    listed = [code for group in RULES.values() for code in group]
    assert sorted(listed) == [f"TD7{n:02d}" for n in range(19)] and set(RULES) == set(VERDICTS)


@pytest.mark.parametrize(("launch", "says"), [
    ({"RANK": "0", "WORLD_SIZE": "2"}, "MASTER_ADDR, MASTER_PORT are not set"),
    ({**LAUNCH, "RANK": "one"}, "RANK='one' is not an integer"),
    ({**LAUNCH, "WORLD_SIZE": "0"}, "WORLD_SIZE=0 must be at least 1"),
    ({**LAUNCH, "LOCAL_RANK": "2", "LOCAL_WORLD_SIZE": "2"}, "LOCAL_RANK=2 is outside 0..1"),
    ({**LAUNCH, "LOCAL_WORLD_SIZE": "4"}, "LOCAL_WORLD_SIZE=4 is larger than WORLD_SIZE=2"),
    ({**LAUNCH, "MASTER_PORT": "0"}, "MASTER_PORT=0 is not a TCP port"),
])
def test_launch_problems(launch: dict[str, str], says: str) -> None:
    problems = launch_problems(facts(mode="launcher", launch=launch, master_resolves=True))
    assert any(says in p for p in problems), problems


def test_launch_is_not_judged_in_standalone_mode_or_when_fine() -> None:
    assert launch_problems(facts(mode="standalone", launch={})) == []
    assert launch_problems(facts(mode="launcher", launch={**LAUNCH, "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2"},
                                 master_resolves=True)) == []
    assert "does not resolve" in launch_problems(facts(mode="launcher", launch=LAUNCH, master_resolves=False))[0]


def test_loopback_master_on_several_hosts() -> None:
    multi = {**LAUNCH, "MASTER_ADDR": "localhost", "WORLD_SIZE": "16", "LOCAL_WORLD_SIZE": "8"}
    assert codes(mode="launcher", launch=multi, master_ips=["::1", "127.0.0.1"], master_resolves=True) == ["TD701"]
    single = {**multi, "WORLD_SIZE": "8"}
    assert codes(mode="launcher", launch=single, master_ips=["127.0.0.1"], master_resolves=True) == []
    seen_on_two_hosts = [rank(0), rank(1, hostname="node-1")]
    assert "TD701" in codes(mode="launcher", launch={**LAUNCH, "MASTER_ADDR": "127.0.0.1"}, master_ips=["127.0.0.1"],
                            master_resolves=True, ranks=seen_on_two_hosts)


def test_missing_ranks_are_named_unless_they_explain_themselves() -> None:
    found = judge(facts(world_size=4, missing=[2, 3], timeout=5, ranks=[rank(0), rank(1)]))
    assert [f.message for f in found] == ["ranks 2-3 never reached the rendezvous store at node-0:29500 within 5 s (2/4 joined)"]
    explained = [rank(0), rank(1, arrived=False, connect="timeout", store_error="could not reach the store")]
    assert codes(world_size=2, missing=[1], ranks=explained) == ["TD703"]


def test_disagreeing_launch_variables_and_duplicate_ranks() -> None:
    found = judge(facts(world_size=2, ranks=[rank(0), rank(1, master="node-0:29501")]))
    assert [f.rule for f in found] == ["TD705"] and "MASTER_ADDR:MASTER_PORT differs" in found[0].message
    (duplicate,) = judge(facts(world_size=2, ranks=[rank(0), rank(1, duplicates=2)]))
    assert duplicate.message == "2 processes claimed RANK=1" and duplicate.rank == 1
    other_host = rank(1, hostname="node-1", local_rank=0, local_world_size=1)
    assert codes(world_size=2, ranks=[rank(0, local_world_size=1), other_host]) == []


def test_collective_timeout_says_where_every_rank_was() -> None:
    stuck = {"op": "all_reduce", "backend": "gloo", "bytes": 1024, "ok": False, "problem": "timeout", "detail": "Timed out"}
    done = {"op": "broadcast", "backend": "gloo", "bytes": 1024, "ok": True}
    (finding,) = judge(facts(world_size=3, timeout=3, ranks=[
        rank(0, local_world_size=3, collectives=[done, stuck]),
        rank(1, local_world_size=3, collectives=[done], last_completed="broadcast 1 KiB (gloo)",
             exit="stopped after rank 0 had finished"),
        rank(2, local_world_size=3, collectives=[done], position="barrier (gloo)"),
    ]))
    assert finding.rule == "TD707"
    assert finding.message == (
        "all_reduce 1 KiB (gloo) did not complete within 3 s: rank 0 waited in it; rank 1 never entered it "
        "(last completed: broadcast 1 KiB (gloo)) (stopped after rank 0 had finished); rank 2 was in barrier (gloo)")


def test_wrong_results_and_failures() -> None:
    wrong = {"op": "broadcast", "backend": "gloo", "bytes": 64, "ok": False, "problem": "wrong", "detail": "rank 1 got 0"}
    (finding,) = judge(facts(world_size=2, ranks=[rank(0), rank(1, collectives=[wrong])]))
    assert finding.rule == "TD706" and finding.rank == 1 and "broadcast 64 B (gloo)" in finding.message
    same = "process group: RuntimeError: boom"
    (failed,) = judge(facts(world_size=2, ranks=[rank(0, error=same), rank(1, error=same)]))
    assert failed.message == f"ranks 0-1 failed in {same}" and failed.rank is None
    (crash,) = judge(facts(world_size=2, ranks=[rank(0), rank(1, exit="killed by signal 9")]))
    assert crash.message == "rank 1 killed by signal 9"


def test_versions_layout_gpus_rng() -> None:
    assert codes(world_size=2, ranks=[rank(0), rank(1, torch="2.4.1")]) == ["TD708"]
    assert codes(world_size=2, ranks=[rank(0), rank(1, local_rank=0)]) == ["TD709"]
    assert codes(world_size=3, ranks=[rank(0), rank(1), rank(2)]) == ["TD709"]  # 3 ranks, LOCAL_WORLD_SIZE=2
    assert codes(world_size=3, missing=[2], ranks=[rank(0), rank(1), {"rank": 2, "arrived": False}]) == ["TD704"]
    gpu = {"gpu_count": 2}
    assert codes(world_size=2, ranks=[rank(0, **gpu, device="GPU-a"), rank(1, **gpu, device="GPU-a")]) == ["TD710"]
    assert codes(world_size=2, ranks=[rank(0, **gpu, device="GPU-a"), rank(1, **gpu, device="GPU-b")]) == []
    same_uuid_other_host = [rank(0, local_world_size=1, gpu_count=1, device="GPU-a"),
                            rank(1, hostname="node-1", local_rank=0, local_world_size=1, gpu_count=1, device="GPU-a")]
    assert codes(world_size=2, ranks=same_uuid_other_host) == []
    assert codes(world_size=2, ranks=[rank(0, gpu_count=2, local_rank=3, local_world_size=4), rank(1, local_world_size=4)]) == ["TD709", "TD710"]
    assert codes(world_size=2, ranks=[rank(0, rng="x"), rank(1, rng="x")]) == ["TD711"]
    assert codes(world_size=1, ranks=[rank(0, world_size=1, local_world_size=1)]) == []


@pytest.mark.parametrize(("variable", "value", "problem"), [
    ("GLOO_SOCKET_IFNAME", "eth0", ("absent", ("eth0",))),
    ("GLOO_SOCKET_IFNAME", "ens5,ens6", ("absent", ("ens6",))),
    ("GLOO_SOCKET_IFNAME", "ens5", None),
    ("NCCL_SOCKET_IFNAME", "eth", ("no-prefix", ("eth",))),
    ("NCCL_SOCKET_IFNAME", "ens,eth", None),
    ("NCCL_SOCKET_IFNAME", "=ens", ("absent", ("ens",))),
    ("NCCL_SOCKET_IFNAME", "=ens5", None),
    ("NCCL_SOCKET_IFNAME", "^docker,lo", None),
])
def test_interface_names(variable: str, value: str, problem: tuple[str, tuple[str, ...]] | None) -> None:
    assert interface_problem(variable, value, ["lo", "ens5", "docker0"]) == problem


def test_a_process_group_failure_explained_by_the_interface_is_reported_once() -> None:
    error = "process group: RuntimeError: Unable to find address for: eth9"
    ranks = [rank(r, interfaces=["lo", "eth0"], socket_ifname={"GLOO_SOCKET_IFNAME": "eth9"}, error=error) for r in (0, 1)]
    found = judge(facts(world_size=2, ranks=ranks))
    assert [f.rule for f in found] == ["TD713"] and found[0].rank is None


# -- several nodes --------------------------------------------------------------------------------
def lone(number: int, **data: Any) -> dict[str, Any]:
    """A rank alone on its node."""
    return rank(number, local_rank=0, local_world_size=1, **data)


SLURM = {"SLURM_JOB_NODELIST": "gpu[01-02]", "SLURM_PROCID": "0", "SLURM_STEP_NUM_TASKS": "2", "SLURM_NODEID": "0",
         "SLURM_LOCALID": "0", "SLURM_STEP_TASKS_PER_NODE": "1(x2)"}


def test_several_nodes_simulated_on_one_host_are_one_host() -> None:
    """Two nodes on one machine (a test, a VM): loopback addresses are fine there."""
    launch = {**LAUNCH, "MASTER_ADDR": "127.0.0.1", "LOCAL_WORLD_SIZE": "1"}
    ranks = [rank(0, node="0", host_ips=["127.0.0.1"], local_rank=0, local_world_size=1),
             rank(1, node="1", host_ips=["127.0.0.1"], local_rank=0, local_world_size=1)]
    assert codes(mode="nodes", launch=launch, master_ips=["127.0.0.1"], master_resolves=True, world_size=2, ranks=ranks) == []
    ranks[1]["hostname"] = "node-1"  # now on two hosts: both a loopback MASTER_ADDR and gloo on loopback break the job
    ranks[0]["host_ips"] = ["10.0.0.1"]
    assert codes(mode="nodes", launch=launch, master_ips=["127.0.0.1"], master_resolves=True, world_size=2, ranks=ranks) == ["TD701", "TD716"]


def test_master_addr_outside_the_slurm_job() -> None:
    base = {"mode": "launcher", "master_resolves": True, "world_size": 2, "slurm_nodes": ["gpu01", "gpu02"],
            "slurm_node_ips": ["10.0.1.1", "10.0.1.2"]}
    login = {**LAUNCH, **SLURM, "MASTER_ADDR": "login01"}
    (finding,) = judge(facts(**base, launch=login, master_ips=["10.0.0.3"]))
    assert finding.rule == "TD714" and finding.message.startswith("MASTER_ADDR=login01 is not a node of this SLURM job (gpu01, gpu02) (it resolves to 10.0.0.3)")
    for addr, ips in (("gpu01", ["10.0.1.1"]), ("gpu01.cluster", ["10.0.1.1"]), ("gpu01-ib", ["10.0.9.1"]), ("10.0.1.1", ["10.0.1.1"])):
        zero = lone(0, local_ips=["10.0.1.1", "10.0.9.1"])  # gpu01-ib: another network's name of the first node
        assert codes(**base, launch={**login, "MASTER_ADDR": addr}, master_ips=ips, ranks=[zero]) == [], addr
    assert codes(**{**base, "slurm_node_ips": []}, launch=login, master_ips=["10.0.0.3"]) == []  # nodes not resolved: no verdict
    assert codes(**base, launch=login, master_ips=["10.0.0.3"], derived=["MASTER_ADDR"]) == []  # filled in by the preflight


def test_task_counts_that_disagree_with_srun() -> None:
    (finding,) = judge(facts(mode="launcher", launch={**LAUNCH, **SLURM, "WORLD_SIZE": "16"}))
    assert finding.rule == "TD715" and finding.message.endswith("WORLD_SIZE=16 but the step's tasks (SLURM_STEP_NUM_TASKS) is 2")
    torchrun = {**LAUNCH, **SLURM, "TORCHELASTIC_RUN_ID": "7", "LOCAL_WORLD_SIZE": "8", "WORLD_SIZE": "16", "RANK": "3",
                "SLURM_STEP_TASKS_PER_NODE": "8(x2)", "SLURM_STEP_NUM_TASKS": "16"}
    (finding,) = judge(facts(mode="launcher", launch=torchrun))
    assert "srun started 8 tasks on this node and each runs its own torchrun of 8 ranks each: 64 processes" in finding.message
    assert "--ntasks-per-node=1" in finding.hint
    assert codes(mode="launcher", launch={**torchrun, "SLURM_STEP_TASKS_PER_NODE": "1(x2)", "SLURM_STEP_NUM_TASKS": "2"}) == []
    assert codes(mode="launcher", launch={**LAUNCH, **SLURM}) == []
    assert codes(mode="launcher", launch={**LAUNCH, **SLURM, "WORLD_SIZE": "16"}, derived=["WORLD_SIZE"]) == []


def test_master_addr_that_is_not_rank_0s_host() -> None:
    zero = lone(0, master_resolved=["10.0.0.9"], local_ips=["10.0.0.1", "127.0.0.1"])
    (finding,) = judge(facts(mode="launcher", launch=LAUNCH, world_size=2, ranks=[zero]))
    assert finding.rule == "TD717" and finding.message.startswith("MASTER_ADDR=node-0 resolves to 10.0.0.9 on node-0, where rank 0 runs")
    for resolved in (["10.0.0.1"], ["127.0.1.1"]):  # its own address; any loopback address is this host
        assert codes(mode="launcher", launch=LAUNCH, world_size=2, ranks=[{**zero, "master_resolved": resolved}]) == []


def test_a_node_address_the_others_cannot_reach() -> None:
    probe = {"via": "GLOO_SOCKET_IFNAME=eth1", "address": "10.99.0.2:41200"}
    failed = {"to": 1, "via": probe["via"], "address": probe["address"], "problem": "unreachable"}
    ranks = [lone(0, reach=[failed]), lone(1, hostname="node-1", probes=[probe], error="process group: Gloo connectFullMesh failed")]
    (finding,) = judge(facts(mode="launcher", launch=LAUNCH, world_size=2, ranks=ranks))  # the process group's failure is explained
    assert finding.rule == "TD718" and finding.message == (
        "rank 0 on node-0 could not reach rank 1's node (node-1) at 10.99.0.2:41200, the address GLOO_SOCKET_IFNAME=eth1 picks there: "
        "there is no route to it from there")
    assert codes(mode="launcher", launch=LAUNCH, world_size=2, ranks=[lone(0, reach=[{**failed, "problem": None}]), lone(1, hostname="node-1")]) == []
