"""Synthetic stand-ins for the torchvision data sets the corpus uses (td_synthetic_images.py)."""

from td_synthetic_images import CIFAR10, CIFAR100, KMNIST, MNIST, FakeData, FashionMNIST, ImageFolder  # noqa: F401
