"""Computes top-1/top-5 accuracy as train.py does (compute_accuracy(..., topk=(1, 5))) on the
outputs of a small classifier for a random batch. metrics.py is loaded by its path: the package's
__init__ imports its datasets and transforms, which need torchvision (not installable for this torch)."""
import importlib.util

import torch
import torch.nn as nn

spec = importlib.util.spec_from_file_location("metrics", "pytorch_image_classification/utils/metrics.py")
metrics = importlib.util.module_from_spec(spec)
spec.loader.exec_module(metrics)

torch.manual_seed(0)
model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 8 * 8, 10))
images, targets = torch.randn(16, 3, 8, 8), torch.randint(0, 10, (16,))
model.eval()
with torch.no_grad():
    outputs = model(images)
acc1, acc5 = metrics.compute_accuracy(None, outputs, targets, augmentation=False, topk=(1, 5))
print("acc@1", acc1.item(), "acc@5", acc5.item())
