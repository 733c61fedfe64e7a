"""TD567: a recurrent layer's (output, state) tuple kept whole and used as a tensor."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from tests.run.test_crash import explained, line_of


class Tagger(nn.Module):
    def __init__(self, layer: nn.Module) -> None:
        super().__init__()
        self.rnn = layer
        self.fc = nn.Linear(16, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.rnn(x)
        return self.fc(out[:, -1])


@pytest.mark.parametrize(("layer", "parts"), [(nn.LSTM(8, 16, batch_first=True), "(output, (h_n, c_n))"),
                                              (nn.GRU(8, 16, batch_first=True), "(output, h_n)")], ids=["lstm", "gru"])
def test_the_tuple_is_told_at_the_line_that_kept_it_whole(layer: nn.Module, parts: str) -> None:
    finding = explained(lambda: Tagger(layer)(torch.randn(4, 5, 8)))
    assert finding.rule == "TD567" and finding.line == line_of("out = self.rnn(x)", Tagger.forward)
    assert parts in finding.message and f"crashes at tests/observe/test_crash_rnn_output.py:{finding.line + 1}" in finding.message
    assert "= self.rnn(x)`" in finding.hint


def test_the_tuple_handed_to_a_layer_and_asked_for_its_shape() -> None:
    lstm, fc = nn.LSTM(8, 16, batch_first=True), nn.Linear(16, 2)

    def into_layer() -> None:
        hidden = lstm(torch.randn(4, 5, 8))
        fc(hidden)

    def shape() -> None:
        hidden = lstm(torch.randn(4, 5, 8))
        print(hidden.shape)

    assert explained(into_layer).rule == "TD567"
    assert explained(shape).rule == "TD567"


def test_a_tuple_that_no_recurrent_layer_made_stays_the_generic_crash() -> None:
    def pair() -> None:
        both = (torch.zeros(4, 5), torch.zeros(4))
        print(both[:, -1])

    assert explained(pair).rule == "TD001"
