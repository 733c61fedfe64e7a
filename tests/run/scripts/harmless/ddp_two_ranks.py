"""Deterministic 2-rank DistributedDataParallel training (gloo, torch.multiprocessing.spawn):
dropout, a DistributedSampler with set_epoch, a loss all-reduced for logging, a barrier. Rank 0
saves the state; rank 1's must equal it (checked here, so a divergence fails the script too)."""

import socket
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def train(rank: int, world: int, out: str, port: int) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
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
    dist.destroy_process_group()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


if __name__ == "__main__":
    mp.spawn(train, args=(2, sys.argv[1], free_port()), nprocs=2)
