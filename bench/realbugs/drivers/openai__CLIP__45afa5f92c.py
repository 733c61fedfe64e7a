"""Loads a CLIP checkpoint saved as a plain state dict (a small ViT CLIP with random weights, saved
with torch.save) through clip.load(path) on the CPU, as the README's usage does with a local file,
then scores an image against two captions."""
import clip
import numpy as np
import torch
from clip.model import CLIP
from PIL import Image

torch.manual_seed(0)
model = CLIP(embed_dim=32, image_resolution=32, vision_layers=2, vision_width=64, vision_patch_size=8,
             context_length=77, vocab_size=49408, transformer_width=64, transformer_heads=1, transformer_layers=2)
torch.save(model.state_dict(), "tiny-clip.pt")

model, preprocess = clip.load("tiny-clip.pt", device="cpu")
image = preprocess(Image.fromarray(np.random.RandomState(0).randint(0, 255, (48, 48, 3), dtype=np.uint8)))
text = clip.tokenize(["a diagram", "a dog"])
with torch.no_grad():
    logits_per_image, logits_per_text = model(image.unsqueeze(0), text)
print("label probs:", logits_per_image.softmax(dim=-1))
