"""TD575: "too many values to unpack" explained by what was unpacked (a tensor, a dict, a tuple
of another length), and left to the generic crash when the value cannot be read."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from tests.run.test_crash import explained, line_of


def test_a_stacked_batch_unpacked_as_a_pair() -> None:
    def step() -> object:
        sample_pair = torch.zeros(4, 3, 8, 8)
        img, segmentation = sample_pair
        return img, segmentation

    finding = explained(step)
    assert finding.rule == "TD575" and finding.line == line_of("img, segmentation = sample_pair", step)
    assert "tensor of shape [4, 3, 8, 8]" in finding.message and "into 4 values, not 2" in finding.message


def test_a_dict_looped_over_without_items() -> None:
    def loss() -> object:
        logits = {"image": torch.randn(4, 4), "text": torch.randn(4, 4)}
        labels = torch.arange(4)
        return sum([F.cross_entropy(scores, labels)
                    for _, scores in logits])

    finding = explained(loss)
    assert finding.rule == "TD575" and finding.line == line_of("for _, scores in logits", loss)
    assert "iterates a dict, which gives its keys ('image', 'text')" in finding.message
    assert "logits.items()" in finding.hint


def test_a_function_that_returns_three_values_unpacked_into_two() -> None:
    def parts() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return torch.zeros(1), torch.zeros(1), torch.zeros(1)

    def step() -> object:
        returned = parts()
        mean, std = returned
        return mean, std

    finding = explained(step)
    assert finding.rule == "TD575" and "unpacks a tuple of 3 items into 2 names" in finding.message


def test_a_loop_over_the_rows_of_a_matrix() -> None:
    def step() -> object:
        boxes = torch.zeros(5, 4)
        return [x1 + y1 for x1, y1 in boxes]

    finding = explained(step)
    assert finding.rule == "TD575" and "each item is a row of shape [4]" in finding.message


def test_an_unpacked_call_result_cannot_be_read_and_stays_the_generic_crash() -> None:
    def step() -> object:
        first, second = torch.zeros(3, 2).unbind(0)
        return first, second

    assert explained(step).rule == "TD001"


def test_a_right_count_of_names_does_not_match_another_unpacking_on_the_line() -> None:
    def step() -> object:
        pair = (torch.zeros(1), torch.zeros(1))
        trio = torch.zeros(3)
        (a, b), (c, d) = pair, trio
        return a, b, c, d

    assert explained(step).rule == "TD001"  # two unpackings into two names on the line: which one failed is unsure


def test_a_dict_of_three_outputs_unpacked_into_two_names() -> None:
    def step() -> object:
        outputs = {"loss": torch.zeros(()), "logits": torch.zeros(2), "labels": torch.zeros(2)}
        loss, logits = outputs
        return loss, logits

    finding = explained(step)
    assert finding.rule == "TD575" and "unpacks a dict: that gives its 3 keys ('loss', 'logits', 'labels')" in finding.message


def test_of_two_loops_on_the_line_the_one_over_a_dict_without_items() -> None:
    def loss() -> object:
        logits = {"image": {"text": torch.randn(2, 2)}, "text": {"image": torch.randn(2, 2)}}
        labels = torch.arange(2)
        return sum([F.cross_entropy(similarity, labels)
                    for _, values in logits for __, similarity in values.items()])

    finding = explained(loss)
    assert finding.rule == "TD575" and "`for _, values in logits` iterates a dict" in finding.message
