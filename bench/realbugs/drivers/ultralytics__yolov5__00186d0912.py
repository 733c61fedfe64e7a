"""Builds YOLOv5s from the repository's models/yolov5s.yaml for 3 classes and trains it two steps with the
repository's compute_loss and data/hyp.scratch.yaml, set up as train.py does, on random 64x64 images with
one box each."""
import torch
import yaml
from models.yolo import Model
from utils.loss import compute_loss

torch.manual_seed(0)
hyp = yaml.safe_load(open("data/hyp.scratch.yaml"))
model = Model("models/yolov5s.yaml", ch=3, nc=3)
model.nc, model.hyp, model.gr = 3, hyp, 1.0
model.train()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
images = torch.rand(2, 3, 64, 64)
targets = torch.tensor([[0, 1, 0.5, 0.5, 0.3, 0.4], [1, 2, 0.3, 0.6, 0.2, 0.2]])  # image, class, x, y, w, h
for step in range(2):
    loss, loss_items = compute_loss(model(images), targets, model)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(step, loss_items)
