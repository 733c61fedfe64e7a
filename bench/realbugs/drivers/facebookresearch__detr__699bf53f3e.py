"""Runs DETR's panoptic post-processing (models/segmentation.py PostProcessPanoptic) on model outputs
for a batch of two images: in the first, three queries are confident; in the second, no query passes
the threshold (an image where nothing is found)."""
import torch
import torchvision
import torchvision.ops.misc

# util/misc.py parses torchvision's version with float(v[:3]), which reads today's "0.16" as 0.1 and
# takes the torchvision < 0.7 branch; present a version it reads as intended, and the alias
# interpolate = torch.nn.functional.interpolate that torchvision 0.7 to 0.12 had
torchvision.__version__ = "0.9.0"
torchvision.ops.misc.interpolate = torch.nn.functional.interpolate

from models.segmentation import PostProcessPanoptic

torch.manual_seed(0)
num_classes, queries = 250, 10
logits = torch.randn(2, queries, num_classes + 1)
logits[0, :3, [3, 7, 120]] = 20.0  # three confident queries in the first image
outputs = {"pred_logits": logits, "pred_masks": torch.randn(2, queries, 16, 16),
           "pred_boxes": torch.rand(2, queries, 4) * 0.5 + 0.25}
postprocess = PostProcessPanoptic({i: i < 90 for i in range(num_classes + 1)}, threshold=0.85)
results = postprocess(outputs, [(64, 64), (64, 64)])
for r in results:
    print(len(r["png_string"]), [s["category_id"] for s in r["segments_info"]])
