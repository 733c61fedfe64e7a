"""Trains a tiny open_clip CLIP whose towers use QK normalisation (vision_cfg/text_cfg qk_norm=True) a few
steps with open_clip's ClipLoss on random images and token ids."""
import sys

import torch

sys.path.insert(0, "src")  # the README's `export PYTHONPATH=$PWD/src`
import open_clip  # noqa: E402

torch.manual_seed(0)
model = open_clip.CLIP(
    embed_dim=32,
    vision_cfg=dict(image_size=32, patch_size=8, layers=1, width=64, head_width=32, qk_norm=True),
    text_cfg=dict(context_length=16, vocab_size=100, width=64, heads=2, layers=1, qk_norm=True))
loss_fn = open_clip.ClipLoss()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
images, texts = torch.randn(4, 3, 32, 32), torch.randint(1, 100, (4, 16))
for step in range(3):
    image_features, text_features, logit_scale = model(images, texts)
    loss = loss_fn(image_features, text_features, logit_scale)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(step, loss.item())
