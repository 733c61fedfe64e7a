"""TD410 stays silent on a batch of one tensor that needs no move: the data set is built from
a tensor already on the device (the model is also given a moved probe)."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

model = nn.Linear(16, 16).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
on_device = torch.randn(64, 16).to(device)


def train_preloaded():
    for (x,) in DataLoader(TensorDataset(on_device), batch_size=8, shuffle=True):
        loss = (model(x) - x).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def evaluate():
    with torch.no_grad():
        probe = torch.randn(4, 16).to(device)
        return model(probe)
