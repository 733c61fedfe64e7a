"""Fine-tuning a timm Sequencer2D as a feature extractor: the model is built headless (num_classes=0)
and a new linear head of model.num_features inputs is trained a few steps on random images."""
import torch
import torch.nn as nn
from timm.models.sequencer import Sequencer2D

torch.manual_seed(0)
backbone = Sequencer2D(num_classes=0, img_size=32, layers=[1, 1], patch_sizes=[4, 2], embed_dims=[16, 32],
                       hidden_sizes=[8, 16], mlp_ratios=[2.0, 2.0])
head = nn.Linear(backbone.num_features, 3)
optimizer = torch.optim.AdamW([*backbone.parameters(), *head.parameters()], lr=1e-3)
x, y = torch.randn(4, 3, 32, 32), torch.randint(0, 3, (4,))
for step in range(2):
    loss = nn.functional.cross_entropy(head(backbone(x)), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(step, loss.item())
