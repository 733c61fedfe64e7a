"""Runs the weighted k-NN classifier of eval_knn.py (knn_classifier) on CPU features, as
`eval_knn.py --use_cuda False` keeps them: random L2-normalised features of 10 classes, k = 20."""
import torch
import torch.nn.functional as F
from eval_knn import knn_classifier

torch.manual_seed(0)
num_classes, dim = 10, 32
centers = torch.randn(num_classes, dim)
train_labels = torch.randint(0, num_classes, (500,))
test_labels = torch.randint(0, num_classes, (200,))
train_features = F.normalize(centers[train_labels] + 0.5 * torch.randn(500, dim), dim=1)
test_features = F.normalize(centers[test_labels] + 0.5 * torch.randn(200, dim), dim=1)
top1, top5 = knn_classifier(train_features, train_labels, test_features, test_labels, 20, 0.07,
                            num_classes=num_classes)
print(f"20-NN classifier result: Top1: {top1}, Top5: {top5}")
