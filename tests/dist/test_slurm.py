"""SLURM's variables as `torchdoctor dist` reads them under srun (dist/slurm.py)."""

from __future__ import annotations

import pytest

from torchdoctor.dist.slurm import expand_hostlist, in_step, nodes, tasks_here, tasks_per_node, with_launch

TASK = {"SLURM_JOB_ID": "123456", "SLURM_STEP_ID": "0", "SLURM_PROCID": "5", "SLURM_LOCALID": "1", "SLURM_NODEID": "2",
        "SLURM_STEP_NUM_TASKS": "7", "SLURM_STEP_TASKS_PER_NODE": "2(x3),1", "SLURM_STEP_NODELIST": "gpu[01-03],cpu7"}


@pytest.mark.parametrize(("text", "names"), [
    ("gpu[01-03,07],login-a", ["gpu01", "gpu02", "gpu03", "gpu07", "login-a"]),
    ("r[1-2]n[1-2]", ["r1n1", "r1n2", "r2n1", "r2n2"]),
    ("a[9-11]", ["a9", "a10", "a11"]),
    ("node001", ["node001"]),
    ("n[1,3],m", ["n1", "n3", "m"]),
])
def test_expand_hostlist(text: str, names: list[str]) -> None:
    assert expand_hostlist(text) == names


def test_tasks_per_node() -> None:
    assert tasks_per_node("2(x3),1") == [2, 2, 2, 1] and tasks_per_node("8") == [8] and tasks_per_node("x") == []
    assert tasks_here(TASK) == 2 and tasks_here({**TASK, "SLURM_NODEID": "3"}) == 1
    assert nodes(TASK) == ["gpu01", "gpu02", "gpu03", "cpu7"]


def test_an_srun_task_gets_the_variables_it_lacks() -> None:
    filled, names = with_launch({**TASK, "MASTER_PORT": "29500"})
    assert names == ["RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR"]
    assert (filled["RANK"], filled["WORLD_SIZE"], filled["LOCAL_RANK"], filled["LOCAL_WORLD_SIZE"]) == ("5", "7", "1", "2")
    assert (filled["MASTER_ADDR"], filled["MASTER_PORT"]) == ("gpu01", "29500")
    assert with_launch(TASK)[0]["MASTER_PORT"] == "18456"  # from the job id: the same on every task


def test_what_is_set_stays_and_nothing_outside_srun_or_under_torchrun() -> None:
    filled, names = with_launch({**TASK, "RANK": "0", "MASTER_ADDR": "gpu02"})
    assert filled["RANK"] == "0" and filled["MASTER_ADDR"] == "gpu02" and "RANK" not in names
    batch = {k: v for k, v in TASK.items() if k != "SLURM_STEP_NUM_TASKS"}  # sbatch's own shell, not an srun task
    assert not in_step(batch) and with_launch(batch) == (batch, [])
    assert with_launch({**TASK, "TORCHELASTIC_RUN_ID": "1"})[1] == []
