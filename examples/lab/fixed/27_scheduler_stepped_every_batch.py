"""Pitfall: an epoch-based learning-rate scheduler stepped after every batch.

StepLR(step_size=3, gamma=0.1) is meant as "divide the learning rate by 10 every 3 epochs".
Its step() sits in the batch loop, so it divides every 3 *batches*: after 21 batches the
learning rate is below a millionth of its start and the rest of the run changes nothing.
(`torchdoctor check` does not see the loop; run does.)
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

NUM_CLASSES = 4


class Classifier(nn.Module):
    def __init__(self, features=20, hidden=64, classes=NUM_CLASSES):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(features, hidden), nn.ReLU())
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):
        return self.head(self.body(x))


def make_data(n=1024, features=20, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, features, generator=gen)
    weights = torch.randn(features, NUM_CLASSES, generator=torch.Generator().manual_seed(1234))
    y = (x @ weights).argmax(dim=1)
    return x, y


def make():
    torch.manual_seed(0)
    model = Classifier()
    loader = DataLoader(TensorDataset(*make_data()), batch_size=16, shuffle=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    return {"model": model, "data": loader, "loss_fn": nn.CrossEntropyLoss(), "optimizer": optimizer}


def train(epochs=10):
    setup = make()
    model, loader, loss_fn, optimizer = setup["model"], setup["data"], setup["loss_fn"], setup["optimizer"]
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=3, gamma=0.1)
    for epoch in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
        scheduler.step()
        print(f"epoch {epoch + 1}: loss {loss.item():.4f}, lr {scheduler.get_last_lr()[0]:.2e}")
    return loss.item()


if __name__ == "__main__":
    train()
