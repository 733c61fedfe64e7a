"""`save_image` and `make_grid`: the corpus only writes previews; nothing is written here."""

import torch


def make_grid(tensor, *_, **__):
    if isinstance(tensor, (list, tuple)):
        tensor = torch.stack(list(tensor))
    return tensor.detach()[0] if tensor.dim() == 4 else tensor.detach()


def save_image(tensor, fp=None, *_, **__):
    return None
