"""DeiT distillation as main.py sets it up (--distillation-type soft): a small distilled ViT (models.py)
trained a few steps with losses.DistillationLoss against a small convolutional teacher, on random
images; prints how far the distillation head moved."""
import torch
import torch.nn as nn
from losses import DistillationLoss
from models import DistilledVisionTransformer

torch.manual_seed(0)
model = DistilledVisionTransformer(img_size=32, patch_size=8, embed_dim=32, depth=2, num_heads=2, num_classes=5)
teacher = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                        nn.Linear(8, 5)).eval()
criterion = DistillationLoss(nn.CrossEntropyLoss(), teacher, "soft", alpha=0.5, tau=1.0)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
head1_before = model.head1.weight.detach().clone()
images, labels = torch.randn(8, 3, 32, 32), torch.randint(0, 5, (8,))
model.train()
for step in range(3):
    loss = criterion(images, model(images), labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(step, loss.item())
print("distillation head moved by", (model.head1.weight - head1_before).abs().max().item())
