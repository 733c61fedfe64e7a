"""Pitfall: a running context carried across batches with its history, kept working by `retain_graph=True`.

The model adds a moving average of earlier batches' features to each batch's features. The average
is carried into the next batch without `.detach()`, so the second `backward()` raised "Trying to
backward through the graph a second time"; `retain_graph=True` silenced it. Now each backward()
goes back through every earlier batch, and every batch's graph stays alive with the activations
it saved: memory and step time grow with every batch.
(`torchdoctor check` does not see the training loop; run does.)
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

NUM_CLASSES = 4


class ContextClassifier(nn.Module):
    def __init__(self, features=16, hidden=128, classes=NUM_CLASSES):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(features, hidden), nn.ReLU())
        self.head = nn.Linear(hidden, classes)

    def forward(self, x, context=None):
        features = self.encoder(x)
        if context is not None:
            features = features + context
        return self.head(features)


def make_data(n=1024, features=16, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, features, generator=gen)
    y = (x @ torch.randn(features, NUM_CLASSES, generator=gen)).argmax(dim=1)
    return x, y


def make():
    torch.manual_seed(0)
    model = ContextClassifier()
    loader = DataLoader(TensorDataset(*make_data()), batch_size=32, shuffle=True)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    return {"model": model, "data": loader, "loss_fn": nn.CrossEntropyLoss(), "optimizer": optimizer}


def train(steps=300):
    setup = make()
    model, loader, loss_fn, optimizer = setup["model"], setup["data"], setup["loss_fn"], setup["optimizer"]
    context = torch.zeros(128)
    model.train()
    step = 0
    while step < steps:
        for x, y in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(x, context), y)
            loss.backward()
            optimizer.step()
            context = (0.9 * context + 0.1 * model.encoder(x).mean(dim=0)).detach()  # a summary of the batches seen
            step += 1
            if step % 100 == 0:
                print(f"step {step}: loss {loss.item():.4f}")
            if step == steps:
                break
    return loss.item()


if __name__ == "__main__":
    train()
