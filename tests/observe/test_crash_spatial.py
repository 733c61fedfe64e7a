"""TD417's input-too-small: a convolution or pooling whose input shrank below its kernel."""

from __future__ import annotations

import torch
from torch import nn

from tests.run.test_crash import explained


class SmallNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(1, 8, 3), nn.Conv2d(8, 8, 3)
        self.pool = nn.MaxPool2d(2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(self.conv1(x))
        x = self.pool(self.conv2(x))
        return self.pool(x)


def test_a_pooling_given_a_map_smaller_than_its_kernel_names_the_models_input() -> None:
    finding = explained(lambda: SmallNet()(torch.randn(2, 1, 8, 8)))
    assert finding.rule == "TD417"
    assert finding.message.startswith("MaxPool2d `pool` gets a 1x1 feature map ([2, 8, 1, 1]), smaller than its 2x2 kernel: the [2, 1, 8, 8] input of `SmallNet`")


def test_a_convolution_in_a_sequential() -> None:
    model = nn.Sequential(nn.Conv2d(1, 8, 3), nn.MaxPool2d(2), nn.Conv2d(8, 8, 3), nn.MaxPool2d(2), nn.Conv2d(8, 8, 3))
    finding = explained(lambda: model(torch.randn(2, 1, 12, 12)))
    assert "gets a 1x1 feature map" in finding.message and "the [2, 1, 12, 12] input of `Sequential`" in finding.message
    assert model(torch.randn(2, 1, 28, 28)).shape == (2, 8, 3, 3)  # the input size it was built for


def test_a_layer_called_on_its_own() -> None:
    finding = explained(lambda: nn.Conv1d(4, 4, 5)(torch.randn(2, 4, 3)))
    assert finding.rule == "TD417" and finding.message == "Conv1d gets a 3 input ([2, 4, 3]), smaller than its 5 kernel"
