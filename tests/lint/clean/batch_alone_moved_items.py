"""TD410 stays silent on a batch of one tensor that needs no move: the dataset moves its own
items (the model is also given a moved probe)."""
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

model = nn.Linear(16, 16).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)


class MovedItems(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, index):
        return torch.randn(16).to(device)


def train_moved_items():
    for x in DataLoader(MovedItems(), batch_size=8):
        loss = (model(x) - x).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def evaluate():
    with torch.no_grad():
        probe = torch.randn(4, 16).to(device)
        return model(probe)
