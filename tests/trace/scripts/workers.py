"""DataLoader workers forked at every epoch, with epochs shorter than the traced steps: workers
start while the trace runs."""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
torch.set_num_threads(1)
loader = DataLoader(TensorDataset(torch.randn(64, 8), torch.randint(0, 3, (64,))), batch_size=16, shuffle=True, num_workers=2)
model = nn.Linear(8, 3)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(4):
    for x, y in loader:
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
print("done")
