"""The replays of issue 12's detectors must change nothing: a gradient that is not finite
(sqrt at 0) is caught before the step and the step is replayed with anomaly mode (forward,
loss, backward); the compile doctor replays a compiled model with dropout eagerly; the
gradient and weight norms are read every step. The NaN then spreads to the weights, the
same way with and without torchdoctor."""

import sys

import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 8)
        self.drop = nn.Dropout(0.2)
        self.out = nn.Linear(8, 1)

    def forward(self, x):
        h = self.drop(torch.relu(self.fc(x)))
        return self.out(h) + torch.sqrt(h.pow(2).sum(dim=1, keepdim=True) * self.gate)


torch.manual_seed(0)
torch.set_num_threads(1)
model = Net()
model.gate = 1.0
compiled = torch.compile(nn.Sequential(nn.Linear(6, 6), nn.Dropout(0.1), nn.Linear(6, 6)), backend="aot_eager")
optimizer = torch.optim.SGD([*model.parameters(), *compiled.parameters()], lr=0.01)
for step in range(12):
    model.gate = 0.0 if step == 4 else 1.0  # sqrt(0): an infinite gradient at this step
    x, y = torch.randn(16, 6), torch.randn(16, 1)
    optimizer.zero_grad()
    loss = nn.functional.mse_loss(model(compiled(x)), y)
    loss.backward()
    optimizer.step()
torch.save({"model": model.state_dict(), "compiled": compiled.state_dict(), "rng": torch.get_rng_state()}, sys.argv[1])
