"""The README's training recipe at a small scale: a folder of 100 generated 16x16 PNG images (most RGB,
some grayscale and some RGBA, as real image folders hold), a small Unet and GaussianDiffusion, and the
repository's Trainer run for two steps (FID off: its Inception weights cannot be downloaded here)."""
import os

import numpy as np
import torch
from denoising_diffusion_pytorch import GaussianDiffusion, Trainer, Unet
from PIL import Image

torch.manual_seed(0)
rng = np.random.default_rng(0)
os.makedirs("images", exist_ok=True)
for i in range(100):
    mode = "L" if i % 10 == 3 else "RGBA" if i % 10 == 7 else "RGB"
    shape = (16, 16) if mode == "L" else (16, 16, len(mode))
    Image.fromarray(rng.integers(0, 256, shape, dtype=np.uint8), mode).save(f"images/{i:03d}.png")

model = Unet(dim=8, dim_mults=(1, 2))
diffusion = GaussianDiffusion(model, image_size=16, timesteps=20)
trainer = Trainer(diffusion, "images", train_batch_size=16, train_num_steps=2, save_and_sample_every=10 ** 6,
                  calculate_fid=False, results_folder="./results")
trainer.train()
print("trained", trainer.step, "steps")
