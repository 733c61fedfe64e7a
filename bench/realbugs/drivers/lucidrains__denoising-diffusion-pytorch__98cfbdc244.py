"""Training step of the segmentation-mapping diffusion of this branch: a small Unet wrapped in
GaussianDiffusionSegmentationMapping (its default triplet loss), fed a batch of 4 (image, segmentation map) pairs
stacked as (batch, 2, channels, h, w), as its DatasetSegmentation yields them."""
import torch
from denoising_diffusion_pytorch.denoising_diffusion_pytorch import GaussianDiffusionSegmentationMapping, Unet

torch.manual_seed(0)
model = Unet(dim=8, dim_mults=(1, 2))
diffusion = GaussianDiffusionSegmentationMapping(model, image_size=16, timesteps=20, margin=1.0)
optimizer = torch.optim.Adam(diffusion.parameters(), lr=1e-4)
pairs = torch.rand(4, 2, 3, 16, 16)
for step in range(2):
    loss = diffusion(pairs)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(step, loss.item())
