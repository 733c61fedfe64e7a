"""Applies DETR's detection transforms (datasets/transforms.py) with random padding to a generated
PIL image and its box target, then normalises it, as a data pipeline built from those transforms does."""
import numpy as np
import torch
import torchvision.ops
import torchvision.ops.misc
from PIL import Image

# util/misc.py reads torchvision's version "0.16..." as 0.1 and then imports two helpers that only
# torchvision < 0.7 had: give them a stand-in so the module imports with today's torchvision
torchvision.ops._new_empty_tensor = None
torchvision.ops.misc._output_size = None

import datasets.transforms as T

img = Image.fromarray(np.random.RandomState(0).randint(0, 255, (60, 80, 3), dtype=np.uint8))
target = {"boxes": torch.tensor([[10.0, 10.0, 40.0, 30.0]]), "labels": torch.tensor([1]),
          "area": torch.tensor([600.0]), "iscrowd": torch.tensor([0]), "size": torch.tensor([60, 80]),
          "orig_size": torch.tensor([60, 80])}
transform = T.Compose([T.RandomPad(8), T.ToTensor(),
                       T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
image, target = transform(img, target)
print(image.shape, target["size"], target["boxes"])
