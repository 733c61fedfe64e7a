"""Trains a small timm SwinTransformerV2CR (two stages, 64x64 input) a few steps on random images."""
import torch
import torch.nn as nn
from timm.models.swin_transformer_v2_cr import SwinTransformerV2CR

torch.manual_seed(0)
model = SwinTransformerV2CR(img_size=(64, 64), in_chans=3, depths=(1, 1), num_heads=(2, 4), embed_dim=16,
                            num_classes=5, window_size=4, patch_size=4)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
x, y = torch.randn(4, 3, 64, 64), torch.randint(0, 5, (4,))
model.train()
for step in range(2):
    loss = nn.functional.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(step, loss.item())
