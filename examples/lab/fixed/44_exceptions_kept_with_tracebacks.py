"""Pitfall: exceptions kept in a list keep their tracebacks, and the tensors of every frame in them.

Batches with an outlier are skipped, and the error is kept to report how many were. An
exception holds its traceback, the traceback holds the frames it went through, and each frame
holds its variables: here `prepare()`'s normalised copy of the batch. Every skipped batch stays
in memory, in a list that looks like it holds only error messages.
(`torchdoctor check` does not see the training loop; run does.)
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

NUM_CLASSES = 4
FEATURES = 256


class Classifier(nn.Module):
    def __init__(self, features=FEATURES, hidden=64, classes=NUM_CLASSES):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(features, hidden), nn.ReLU())
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):
        return self.head(self.body(x))


def make_data(n=1024, features=FEATURES, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, features, generator=gen)
    y = (x @ torch.randn(features, NUM_CLASSES, generator=gen)).argmax(dim=1)
    return x, y


def prepare(x):
    """The batch, standardised per feature; a batch with an outlier is refused."""
    x = (x - x.mean(dim=0)) / (x.std(dim=0) + 1e-6)
    if x.abs().amax() > 3.6:
        raise ValueError(f"a batch of {len(x)} rows has an outlier")
    return x


def make():
    torch.manual_seed(0)
    model = Classifier()
    loader = DataLoader(TensorDataset(*make_data()), batch_size=32, shuffle=True)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    return {"model": model, "data": loader, "loss_fn": nn.CrossEntropyLoss(), "optimizer": optimizer}


def train(steps=300):
    setup = make()
    model, loader, loss_fn, optimizer = setup["model"], setup["data"], setup["loss_fn"], setup["optimizer"]
    skipped = []
    model.train()
    step = 0
    while step < steps:
        for x, y in loader:
            try:
                x = prepare(x)
            except ValueError as error:
                skipped.append(str(error))  # to report the skipped batches at the end
                continue
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            step += 1
            if step % 100 == 0:
                print(f"step {step}: loss {loss.item():.4f}, {len(skipped)} batches skipped")
            if step == steps:
                break
    return loss.item()


if __name__ == "__main__":
    train()
