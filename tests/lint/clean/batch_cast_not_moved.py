"""TD410 stays silent: the model is moved, but nothing the file gives it is (a CPU run, or a
device chosen elsewhere); `.to(torch.float32)` changes a dtype, not a device."""
import torch
from torch import nn
from torch.utils.data import DataLoader

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def train_dtype_only(model, loader, criterion, optimizer):
    for x, y in loader:
        x = x.to(torch.float32)
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def main():
    loader = DataLoader(torch.randn(8, 784), batch_size=4)
    model = nn.Linear(784, 10).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    train_dtype_only(model, loader, nn.CrossEntropyLoss(), optimizer)
