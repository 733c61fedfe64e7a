"""Fixed: the training DataLoader shuffles, so every batch mixes the classes and every epoch visits them in a new order."""

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

NUM_CLASSES = 4


class Classifier(nn.Module):
    def __init__(self, features=20, hidden=64, classes=NUM_CLASSES):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, classes))

    def forward(self, x):
        return self.net(x)


class FolderDataset(Dataset):
    """Samples listed class by class, the way `ImageFolder` lists its folders."""

    def __init__(self, per_class=256, features=20, seed=0):
        gen = torch.Generator().manual_seed(seed)
        centers = torch.randn(NUM_CLASSES, features, generator=torch.Generator().manual_seed(1234))
        self.x = torch.cat([centers[c] + 2.5 * torch.randn(per_class, features, generator=gen) for c in range(NUM_CLASSES)])
        self.y = torch.arange(NUM_CLASSES).repeat_interleave(per_class)

    def __len__(self):
        return len(self.y)

    def __getitem__(self, index):
        return self.x[index], self.y[index]


def make():
    torch.manual_seed(0)
    model = Classifier()
    loader = DataLoader(FolderDataset(), batch_size=32, shuffle=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    return {"model": model, "data": loader, "loss_fn": nn.CrossEntropyLoss(), "optimizer": optimizer}


def accuracy(model, loader):
    model.eval()
    with torch.no_grad():
        correct = sum((model(x).argmax(dim=1) == y).sum().item() for x, y in loader)
    model.train()
    return correct / len(loader.dataset)


def train(epochs=5):
    setup = make()
    model, loader, loss_fn, optimizer = setup["model"], setup["data"], setup["loss_fn"], setup["optimizer"]
    val_loader = DataLoader(FolderDataset(per_class=64, seed=1), batch_size=64, shuffle=False)
    model.train()
    for epoch in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch + 1}: loss {loss.item():.4f}, val accuracy {accuracy(model, val_loader):.3f}")
    return loss.item()


if __name__ == "__main__":
    train()
