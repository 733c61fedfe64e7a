"""Deterministic training whose memory the account follows and whose leaks the detectors
report (outputs kept with their graphs, small views of whole batches, exceptions kept with
their tracebacks, a view kept after `del`, a DataLoader with a worker): censuses, graph walks
and frame reads must not change the run."""

import sys

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def refuse(x):
    scaled = x * 2
    raise ValueError(f"refused a batch of {len(scaled)}")


if __name__ == "__main__":
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Dropout(0.1), nn.Linear(128, 4))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    data = TensorDataset(torch.randn(1024, 64), torch.randint(0, 4, (1024,)))
    loader = DataLoader(data, batch_size=32, shuffle=True, num_workers=1, generator=torch.Generator().manual_seed(1))
    kept, rows, errors = [], [], []
    step = 0
    while step < 40:
        for x, y in loader:
            features = torch.randn(512, 1024)
            first = features[:2]
            del features
            optimizer.zero_grad()
            logits = model(x)
            loss = F.cross_entropy(logits, y) + 0.0 * first.sum()
            loss.backward()
            optimizer.step()
            kept.append(model[:2](x))
            rows.append(x[0])
            try:
                refuse(x)
            except ValueError as error:
                errors.append(error)
            step += 1
            if step == 40:
                break
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "rng": torch.get_rng_state()}, sys.argv[1])
