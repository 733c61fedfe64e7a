"""A user fine-tunes a small CNN whose convolution has a non-square (3, 1) kernel with OFT
(peft.OFTConfig on the conv), trains a few steps on random images, then merges the adapter."""
import sys

sys.path.insert(0, "src")  # the repository's package lives in src/

import torch
from peft import OFTConfig, get_peft_model
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 8, kernel_size=(3, 1), padding=(1, 0))
        self.head = nn.Linear(8, 3)

    def forward(self, x):
        return self.head(self.conv(x).relu().mean(dim=(2, 3)))


torch.manual_seed(0)
model = get_peft_model(Net(), OFTConfig(target_modules=["conv"], r=0, oft_block_size=4, modules_to_save=["head"]))
opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-3)
for step in range(3):
    x, y = torch.randn(4, 4, 8, 8), torch.randint(0, 3, (4,))
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print("step", step, "loss", round(loss.item(), 4))
merged = model.merge_and_unload()
with torch.no_grad():
    print("merged logits", tuple(merged(torch.randn(2, 4, 8, 8)).shape))
