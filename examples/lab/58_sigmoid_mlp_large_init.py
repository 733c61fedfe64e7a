"""Pitfall: a sigmoid network initialised with weights far too large.

`nn.init.normal_(weight, std=1.0)` looks harmless, but a layer with 512 inputs (half of them
near 1, the sigmoids before it) then gives pre-activations of standard deviation about 15: most
sigmoid inputs sit where the output is 0 or 1 and the derivative nearly zero. The gradients through those units are a hundred
to a million times smaller than they should be, and the network hardly learns.
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

#: the saturation must be seen at several sampled steps (1, 2, 3, 8)
STEPS_TO_SHOW = 10


class Classifier(nn.Module):
    def __init__(self, features=64, hidden=512, classes=4):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(features, hidden), nn.Sigmoid(), nn.Linear(hidden, hidden), nn.Sigmoid(),
                                 nn.Linear(hidden, classes))
        for layer in self.net:
            if isinstance(layer, nn.Linear):
                nn.init.normal_(layer.weight, std=1.0)
                nn.init.zeros_(layer.bias)

    def forward(self, x):
        return self.net(x)


def make_data(n=512, features=64, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, features, generator=gen)
    y = (x[:, 0] > 0).long() + 2 * (x[:, 1] > 0).long()
    return x, y


def make():
    torch.manual_seed(0)
    model = Classifier()
    loader = DataLoader(TensorDataset(*make_data()), batch_size=32, shuffle=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    return {"model": model, "data": loader, "loss_fn": nn.CrossEntropyLoss(), "optimizer": optimizer}


def train(steps=STEPS_TO_SHOW):
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
            if step % 20 == 0:
                print(f"step {step}: loss {loss.item():.4f}")
            if step == steps:
                break
    return loss.item()


if __name__ == "__main__":
    train()
