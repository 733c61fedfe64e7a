"""Pitfall: a forward hook left on during training keeps every output it sees, in its closure.

`log_activation_statistics` registers a hook that collects a layer's outputs to print their mean
now and then. The outputs still carry their autograd graph and the list lives in the hook's
closure, which no variable of the training loop names: nothing in the loop looks like it keeps
tensors, yet every step adds a batch of activations to memory.
(`torchdoctor check` does not see the growth over steps; run does.)
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

NUM_CLASSES = 4


class Classifier(nn.Module):
    def __init__(self, features=32, hidden=256, classes=NUM_CLASSES):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(features, hidden), nn.ReLU())
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):
        return self.head(self.body(x))


def log_activation_statistics(module, every=100):
    """Print the mean of the module's outputs every `every` forward passes."""
    outputs = []

    def hook(layer, inputs, output):
        outputs.append(output)
        if len(outputs) % every == 0:
            print(f"mean activation over the last {every} batches: {torch.stack([o.mean() for o in outputs[-every:]]).mean().item():.4f}")

    return module.register_forward_hook(hook)


def make_data(n=1024, features=32, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, features, generator=gen)
    y = (x @ torch.randn(features, NUM_CLASSES, generator=gen)).argmax(dim=1)
    return x, y


def make():
    torch.manual_seed(0)
    model = Classifier()
    loader = DataLoader(TensorDataset(*make_data()), batch_size=64, shuffle=True)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    return {"model": model, "data": loader, "loss_fn": nn.CrossEntropyLoss(), "optimizer": optimizer}


def train(steps=300):
    setup = make()
    model, loader, loss_fn, optimizer = setup["model"], setup["data"], setup["loss_fn"], setup["optimizer"]
    log_activation_statistics(model.body)
    model.train()
    step = 0
    while step < steps:
        for x, y in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            step += 1
            if step % 100 == 0:
                print(f"step {step}: loss {loss.item():.4f}")
            if step == steps:
                break
    return loss.item()


if __name__ == "__main__":
    train()
