"""Three-tower contrastive training as open_clip's training code sets it up: the loss comes from
open_clip.create_loss for a '3towers' model; small image, text and (frozen) teacher encoders are trained a
few steps on random features."""
import argparse
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, "src")  # the README's `export PYTHONPATH=$PWD/src`
import open_clip  # noqa: E402

torch.manual_seed(0)
args = argparse.Namespace(model="ViT-B-32-3towers", distill=False, local_loss=False, gather_with_grad=False,
                          rank=0, world_size=1, horovod=False, siglip=False)
loss_fn = open_clip.create_loss(args)
image_tower, text_tower, teacher = nn.Linear(24, 16), nn.Linear(12, 16), nn.Linear(24, 16).requires_grad_(False)
logit_scale = nn.Parameter(torch.tensor(2.659))
optimizer = torch.optim.AdamW([*image_tower.parameters(), *text_tower.parameters(), logit_scale], lr=1e-3)
images, texts = torch.randn(8, 24), torch.randn(8, 12)
for step in range(3):
    loss = loss_fn(F.normalize(image_tower(images), dim=-1), F.normalize(text_tower(texts), dim=-1),
                   F.normalize(teacher(images), dim=-1), logit_scale.exp())
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(step, loss.item())
