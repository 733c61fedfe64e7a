"""Fixed: distances logged in millimetres are converted to metres when the table is read, so no sample is a thousand times out of scale."""

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

#: the corrupted row is drawn in the first epoch's second half (for the lab's tests)
STEPS_TO_SHOW = 40


class Regressor(nn.Module):
    def __init__(self, features=6, hidden=32):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(features, hidden), nn.Tanh(), nn.Linear(hidden, 1))

    def forward(self, x):
        return self.net(x)


class SensorReadings(Dataset):
    """Sensor readings and the distance they predict, in metres; row 371's was logged in millimetres."""

    def __init__(self, rows=1024, features=6, seed=0):
        gen = torch.Generator().manual_seed(seed)
        self.x = torch.rand(rows, features, generator=gen) * 2.0
        self.y = self.x @ torch.linspace(-1.0, 1.0, features).unsqueeze(1) + 0.1 * torch.randn(rows, 1, generator=gen)
        self.y[371] = 1520.0  # a distance logged in millimetres
        self.y = torch.where(self.y.abs() > 100, self.y / 1000, self.y)  # distances over 100 m were logged in mm

    def __len__(self):
        return len(self.y)

    def __getitem__(self, index):
        return self.x[index], self.y[index]


def make():
    torch.manual_seed(0)
    model = Regressor()
    loader = DataLoader(SensorReadings(), batch_size=32, shuffle=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    return {"model": model, "data": loader, "loss_fn": nn.MSELoss(), "optimizer": optimizer}


def train(steps=64):
    setup = make()
    model, loader, loss_fn, optimizer = setup["model"], setup["data"], setup["loss_fn"], setup["optimizer"]
    model.train()
    step = 0
    while step < steps:
        for x, y in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            step += 1
            if step % 16 == 0:
                print(f"step {step}: loss {loss.item():.4f}")
            if step == steps:
                break
    return loss.item()


if __name__ == "__main__":
    train()
