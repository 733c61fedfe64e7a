"""Validation of a binary classifier as train.py runs it after each epoch: train.validate() with
train.py's own default arguments, a timm resnet18 with two classes, random 32x32 images on the CPU (the
CUDA-only training entry point itself cannot run here; args.prefetcher is set so validate leaves the
batches where the loader put them)."""
import timm
import torch
import torch.nn as nn
import train
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
args = train.parser.parse_args(["data"])
args.prefetcher, args.distributed = True, False
model = timm.create_model("resnet18", num_classes=2)
loader = DataLoader(TensorDataset(torch.randn(8, 3, 32, 32), torch.randint(0, 2, (8,))), batch_size=4)
metrics = train.validate(model, loader, nn.CrossEntropyLoss(), args)
print(metrics)
