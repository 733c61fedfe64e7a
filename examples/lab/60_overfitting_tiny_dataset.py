"""Pitfall: training on a tiny dataset for many epochs, keeping the last weights.

64 training samples and a wide network: after a few epochs the training loss keeps falling
while the validation loss, computed after each epoch, climbs: the model memorises its 64
samples. The loop trains for all its epochs and the weights it ends with are worse on new data
than those of its best epoch.
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

#: 20 epochs of 4 steps: the validation loss is lowest after epoch 5 and climbs from there
STEPS_TO_SHOW = 80


class Classifier(nn.Module):
    def __init__(self, features=32, hidden=512, classes=4):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, classes))

    def forward(self, x):
        return self.net(x)


def make_data(n, features=32, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, features, generator=gen)
    noisy = torch.rand(n, generator=gen) < 0.2  # labels a model can only memorise
    y = torch.where(noisy, torch.randint(0, 4, (n,), generator=gen), (x[:, 0] > 0).long() + 2 * (x[:, 1] > 0).long())
    return x, y


def make():
    torch.manual_seed(0)
    model = Classifier()
    loader = DataLoader(TensorDataset(*make_data(64)), batch_size=16, shuffle=True)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    return {"model": model, "data": loader, "loss_fn": nn.CrossEntropyLoss(), "optimizer": optimizer}


def train(steps=STEPS_TO_SHOW):
    setup = make()
    model, loader, loss_fn, optimizer = setup["model"], setup["data"], setup["loss_fn"], setup["optimizer"]
    validation = DataLoader(TensorDataset(*make_data(512, seed=1)), batch_size=128)
    step, epoch = 0, 0
    while step < steps:
        model.train()
        for x, y in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            step += 1
        model.eval()
        with torch.no_grad():
            val_loss = sum(loss_fn(model(x), y).item() for x, y in validation) / len(validation)
        epoch += 1
        print(f"epoch {epoch}: train {loss.item():.4f} validation {val_loss:.4f}")
    return val_loss


if __name__ == "__main__":
    train()
