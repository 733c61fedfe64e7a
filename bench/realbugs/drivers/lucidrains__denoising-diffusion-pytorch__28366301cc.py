"""Image-to-image sampling with this branch's GaussianDiffusion: a small Unet, DDIM sampling
(sampling_timesteps < timesteps), started from a batch of given images (sample(imgs=...)), which are
first noised with q_sample."""
import torch
from denoising_diffusion_pytorch.denoising_diffusion_pytorch import GaussianDiffusion, Unet

torch.manual_seed(0)
model = Unet(dim=8, dim_mults=(1, 2))
diffusion = GaussianDiffusion(model, image_size=16, timesteps=20, sampling_timesteps=5).eval()
images = torch.rand(2, 3, 16, 16) * 2 - 1
samples = diffusion.sample(batch_size=2, imgs=images)
print(samples.shape, samples.min().item(), samples.max().item())
