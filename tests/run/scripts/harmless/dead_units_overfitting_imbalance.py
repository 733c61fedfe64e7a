"""ReLU units killed by a learning rate too large (TD484, info: activations sampled through watches
at steps 8, 16, 32), evaluations under no_grad (read by TD488/TD498, too few to report), a 95/5
class split with a plain loss (TD499) and a deep sigmoid stack (TD486, TD487 info): the samples
are read from the forwards the script makes, and the weights end bit for bit as a plain run
leaves them."""

import sys

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
torch.set_num_threads(1)
gen = torch.Generator().manual_seed(0)
y = (torch.rand(512, generator=gen) < 0.05).long()
x = torch.randn(512, 16, generator=gen) + y[:, None]
x_val, y_val = torch.randn(256, 16, generator=gen), torch.randint(0, 2, (256,), generator=gen)
model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Dropout(0.1), nn.Linear(64, 2))
deep = nn.Sequential(*[m for _ in range(12) for m in (nn.Linear(16, 16), nn.Sigmoid())])
optimizer = torch.optim.SGD([*model.parameters(), *deep.parameters()], lr=3.0, momentum=0.9)
loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True, generator=gen)
for epoch in range(3):
    model.train()
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(deep(xb)), yb)
        loss.backward()
        optimizer.step()
    model.eval()
    with torch.no_grad():
        val = nn.functional.cross_entropy(model(deep(x_val)), y_val)
print(f"loss {loss.item():.6f} val {val.item():.6f}")
torch.save({"model": model.state_dict(), "deep": deep.state_dict(), "optimizer": optimizer.state_dict(),
            "rng": torch.get_rng_state()}, sys.argv[1])
