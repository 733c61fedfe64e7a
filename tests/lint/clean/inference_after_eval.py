"""A prediction script done right (TD340's correct twin): the loaded model is switched to eval mode."""

import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Dropout(0.3), nn.Linear(32, 3))

    def forward(self, x):
        return self.body(x)


model = Net()
model.load_state_dict(torch.load("weights.pt", map_location="cpu"))
model.eval()
with torch.no_grad():
    preds = model(torch.randn(16, 8)).argmax(dim=1)
print(preds.tolist())
