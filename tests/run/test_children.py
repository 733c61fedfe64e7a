"""Child processes are observed too: DataLoader workers, torch.multiprocessing.spawn, torchrun.

Each child Python inherits the bootstrap on PYTHONPATH, writes its own records, and the runner
merges them into one report (one finding per bug, with the ranks it was seen on).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.run.conftest import torchdoctor_run
from torchdoctor.dist.launch import free_port

pytestmark = pytest.mark.slow

TRAIN = """
import os
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn


def train(rank):
    torch.manual_seed(0)
    model = nn.Linear(8, 4)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(rank)
    x, y = torch.randn(32, 8, generator=g), torch.randint(0, 4, (32,), generator=g)
    for step in range(4):
        optimizer.zero_grad()
        loss = F.cross_entropy(F.softmax(model(x), dim=1), y)
        loss.backward()
        optimizer.step()
"""


def test_exception_in_a_dataloader_worker_is_placed_in_the_dataset(write, tmp_path: Path) -> None:
    script = write(
        "workers.py",
        "import torch\nfrom torch.utils.data import DataLoader, Dataset\n\n"
        "class Items(Dataset):\n"
        "    def __len__(self):\n        return 12\n\n"
        "    def __getitem__(self, i):\n        return torch.tensor([1.0, 2.0, 3.0][i % 4])\n\n"
        "if __name__ == '__main__':\n"
        "    for batch in DataLoader(Items(), batch_size=4, num_workers=2):\n        pass\n",
    )
    ran = torchdoctor_run(str(script), cwd=tmp_path)
    crash = ran.finding("TD001")
    assert crash["line"] == 9 and "raised in DataLoader worker" in crash["message"]


def test_torch_multiprocessing_spawn_children(write, tmp_path: Path) -> None:
    script = write(
        "spawned.py",
        TRAIN
        + "\n\ndef worker(rank, world, port):\n"
        "    dist.init_process_group('gloo', init_method=f'tcp://127.0.0.1:{port}', rank=rank, world_size=world)\n"
        "    train(rank)\n"
        "    if rank == 1:\n"
        "        raise ValueError('rank 1 stops here')\n"
        "    dist.destroy_process_group()\n\n"
        "if __name__ == '__main__':\n"
        f"    torch.multiprocessing.spawn(worker, args=(2, {free_port()}), nprocs=2)\n",
    )
    ran = torchdoctor_run(str(script), cwd=tmp_path)
    softmax = ran.finding("TD101")
    assert softmax["file"] == "spawned.py" and softmax["evidence"]["ranks"] == [0, 1]
    crash = ran.finding("TD001")
    assert crash["rank"] == 1 and "rank 1 stops here" in crash["message"]
    assert {p["role"] for p in ran.report["meta"]["processes"]} == {"main", "child"}


def test_torchrun_module_form_merges_the_ranks(write, tmp_path: Path) -> None:
    script = write(
        "ddp.py",
        TRAIN + "\n\nif __name__ == '__main__':\n    dist.init_process_group('gloo')\n    train(dist.get_rank())\n    dist.destroy_process_group()\n",
    )
    ran = torchdoctor_run(
        "-m", "torch.distributed.run", "--nproc-per-node", "2", "--master-port", str(free_port()), str(script), cwd=tmp_path
    )
    assert ran.report["meta"]["exit_status"] == 0
    (finding,) = ran.report["findings"]
    assert finding["rule"] == "TD101" and finding["evidence"]["ranks"] == [0, 1] and finding["line"] == 17  # the softmax line of TRAIN
    ranks = sorted(p["rank"] for p in ran.report["meta"]["processes"] if p["role"] == "rank")
    assert ranks == [0, 1]
