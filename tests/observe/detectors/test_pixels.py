"""TD450: raw 0..255 pixels reaching the first layer of a model, on both sides."""

from __future__ import annotations

import torch
from torch import nn

from tests.lab import LAB
from tests.observe.detectors.conftest import line_of, observing, run_lab
from torchdoctor.observe.detectors.pixels import RawPixels

HERE = __file__


class ScalesItself(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.conv(images / 255.0).mean((1, 2, 3))


def fit(model: nn.Module, images: torch.Tensor, steps: int = 3) -> None:
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(steps):
        optimizer.zero_grad()
        model(images).pow(2).mean().backward()  # the model call
        optimizer.step()


def conv_net() -> nn.Module:
    return nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.Conv2d(4, 4, 3), nn.Flatten(), nn.LazyLinear(1))


def pixels() -> torch.Tensor:
    return torch.randint(0, 256, (8, 1, 12, 12), generator=torch.Generator().manual_seed(0)).float()


def test_lab_raw_pixels_are_flagged_at_the_model_call() -> None:
    observed = run_lab("22_unnormalized_pixels.py", (RawPixels,), steps=4)
    finding = observed.one("TD450")
    assert finding.line == line_of(LAB / "22_unnormalized_pixels.py", "loss = loss_fn(model(x), y)")
    assert "`features.0`" in finding.message and "from 0 to 255" in finding.message


def test_lab_fixed_twin_divides_by_255() -> None:
    assert run_lab("22_unnormalized_pixels.py", (RawPixels,), fixed=True, steps=4).codes == set()


def test_raw_pixels_are_flagged_at_the_model_call() -> None:
    with observing(RawPixels) as observed:
        fit(conv_net(), pixels())
    assert observed.one("TD450").line == line_of(HERE, "# the model call")


def test_a_model_that_scales_its_input_first_is_not_flagged() -> None:
    with observing(RawPixels) as observed:
        fit(ScalesItself(), pixels())
    assert observed.codes == set()


def test_masks_class_maps_and_standardised_inputs_are_not_flagged() -> None:
    masks = (torch.rand(8, 1, 12, 12, generator=torch.Generator().manual_seed(0)) > 0.5).float()
    class_map = torch.randint(0, 20, (8, 1, 12, 12)).float()
    standardised = (pixels() - 128) / 64
    for images in (masks, class_map, standardised, pixels() / 255):
        with observing(RawPixels) as observed:
            fit(conv_net(), images)
        assert observed.codes == set()


def test_raw_pixels_flattened_into_a_linear_layer_are_flagged() -> None:
    mlp = nn.Sequential(nn.Flatten(), nn.Linear(784, 32), nn.ReLU(), nn.Linear(32, 1))
    images = torch.randint(0, 256, (8, 1, 28, 28), generator=torch.Generator().manual_seed(0)).float()
    with observing(RawPixels) as observed:
        fit(mlp, images)
    assert "`1`" in observed.one("TD450").message


def test_integer_tabular_features_and_word_counts_are_not_pixels() -> None:
    generator = torch.Generator().manual_seed(0)
    ages = torch.randint(0, 100, (8, 12), generator=generator).float()
    counts = torch.poisson(torch.full((8, 300), 0.5), generator=generator)
    for features in (ages, counts):
        with observing(RawPixels) as observed:
            fit(nn.Linear(features.shape[1], 1), features)
        assert observed.codes == set()
