"""Where a rank stands in its job, read from its launcher's variables (run/nodes/job.py)."""

from __future__ import annotations

import os

from torchdoctor.run.nodes.job import Launch, launch_facts, split_store, surely_spans
from torchdoctor.run.records import ENV_PARENT

TORCHRUN = {"MASTER_ADDR": "node-0", "MASTER_PORT": "29500", "LOCAL_WORLD_SIZE": "8", "GROUP_RANK": "1",
            "TORCHELASTIC_RUN_ID": "job7", "TORCHELASTIC_USE_AGENT_STORE": "True"}


def test_torchrun_variables() -> None:
    launch = launch_facts(TORCHRUN)
    assert (launch.store, launch.local_world, launch.group_rank, launch.run_id, launch.agent_store) == ("node-0:29500", 8, 1, "job7", True)
    assert not launch.main and launch.host
    assert surely_spans(launch, 16) and not surely_spans(launch, 8)


def test_a_tcp_init_method_names_the_store() -> None:
    launch = launch_facts({"MASTER_ADDR": "ignored", "MASTER_PORT": "1"}, "tcp://10.0.0.7:23456?rank=0")
    assert launch.store == "10.0.0.7:23456" and launch.local_world is None


def test_a_rank_that_is_its_runners_own_child_is_its_only_rank() -> None:
    launch = launch_facts({ENV_PARENT: str(os.getppid()), "MASTER_ADDR": "h", "MASTER_PORT": "2", "SLURM_JOB_ID": "77", "SLURM_STEP_ID": "0"})
    assert launch.main and surely_spans(launch, 2) and not surely_spans(launch, 1)
    assert launch.job == "77.0" and "77.0" in launch.key()


def test_ranks_a_script_starts_itself_may_all_be_here() -> None:
    assert not surely_spans(launch_facts({"MASTER_ADDR": "h", "MASTER_PORT": "2"}), 4)


def test_the_job_key_is_a_file_name_and_changes_with_the_store() -> None:
    one, other = (Launch.from_dict({**launch_facts(TORCHRUN).to_dict(), "store": s}) for s in ("node-0:29500", "node-0:29501"))
    assert one.key() != other.key() and "/" not in one.key() and ":" not in one.key()
    assert Launch.from_dict(one.to_dict()) == one


def test_split_store() -> None:
    assert split_store("node-0:29500") == ("node-0", 29500) and split_store("[::1]:80") == ("::1", 80)
    assert split_store("nohost") is None and split_store("h:port") is None
