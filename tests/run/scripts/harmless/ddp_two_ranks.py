"""Deterministic 2-rank DistributedDataParallel training (gloo, torch.multiprocessing.spawn):
dropout, a DistributedSampler with set_epoch, a loss all-reduced for logging, a barrier. Rank 0
saves the state; rank 1's must equal it (checked here, so a divergence fails the script too).

The ranks meet through a file next to the output rather than a TCP port: a port picked free
can be taken by another test running at the same time, and this script is a baseline that
must not fail on its own. Both ranks pass a last barrier, so neither tears down gloo while
the other is still saving."""

import sys
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def train(rank: int, world: int, out: str, store: str) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world)
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(128, 16), torch.randint(0, 3, (128,)))
    sampler = DistributedSampler(data, seed=1)
    loader = DataLoader(data, batch_size=16, sampler=sampler)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Dropout(0.2), nn.Linear(32, 3)))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    torch.manual_seed(rank)  # dropout masks differ per rank, as they should
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(model(xb), yb)
            loss.backward()
            optimizer.step()
            logged = loss.detach().clone()
            dist.all_reduce(logged)
    dist.barrier()
    state = {"model": model.module.state_dict(), "optimizer": optimizer.state_dict(), "rng": torch.get_rng_state()}
    gathered = [None] * world
    dist.all_gather_object(gathered, {k: v.tolist() for k, v in state["model"].items()})
    assert all(g == gathered[0] for g in gathered), "the replicas differ"
    if rank == 0:
        torch.save(state, out)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    output = Path(sys.argv[1]).resolve()
    rendezvous = output.with_suffix(".rendezvous")
    rendezvous.unlink(missing_ok=True)
    mp.spawn(train, args=(2, str(output), str(rendezvous)), nprocs=2)
