"""One corrupted target in a shuffled DataLoader (TD496 fires at its batch, with the
batch indices drawn through the sampler's stand-in): the indices are read, never drawn again, so
the shuffle and the weights end bit for bit as a plain run leaves them."""

import sys

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

if __name__ == "__main__":
    torch.manual_seed(0)
    torch.set_num_threads(1)
    x = torch.randn(512, 8)
    y = x.sum(dim=1, keepdim=True)
    y[300] = 5000.0
    loader = DataLoader(TensorDataset(x, y), batch_size=16, shuffle=True)
    model = nn.Linear(8, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    for epoch in range(2):
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(xb), yb)
            loss.backward()
            optimizer.step()
    print(f"loss {loss.item():.6f}")
    torch.save({"model": model.state_dict(), "rng": torch.get_rng_state()}, sys.argv[1])
