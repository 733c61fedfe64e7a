"""TD302 at run time: sequence layers built time-first and fed batch-first data, both sides."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader, TensorDataset

from tests.observe.detectors.conftest import line_of, observing
from torchdoctor.observe.detectors.layout import SequenceFirstLayout


class Tagger(nn.Module):
    def __init__(self, encoder: nn.Module, transpose: bool = False, time_first: bool = False) -> None:
        super().__init__()
        self.encoder, self.transpose, self.time_first, self.head = encoder, transpose, time_first, nn.Linear(16, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.transpose:
            x = x.transpose(0, 1)
        out = self.encoder(x)  # the sequence layer
        out = out[0] if isinstance(out, tuple) else out
        return self.head(out[-1] if self.transpose or self.time_first else out[:, -1])


def train(model: nn.Module, loader: DataLoader) -> None:
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for x, y in loader:
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()


def batch_first_loader() -> DataLoader:
    """Batches of (batch 8, time 12, features 16)."""
    return DataLoader(TensorDataset(torch.randn(48, 12, 16), torch.randint(0, 3, (48,))), batch_size=8)


def test_lstm_built_time_first_and_fed_batch_first_is_flagged_at_the_call() -> None:
    with observing(SequenceFirstLayout) as observed:
        train(Tagger(nn.LSTM(16, 16)), batch_first_loader())
    finding = observed.one("TD302")
    assert finding.line == line_of(__file__, "out = self.encoder(x)  # the sequence layer")
    assert "(8, 12, 16)" in finding.message and "batch_first=True" in finding.hint


class Encoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.rnn = nn.GRU(16, 16)  # built here

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.rnn(x)[0]


def test_a_layer_built_in_a_modules_init_is_flagged_where_it_was_built() -> None:
    with observing(SequenceFirstLayout) as observed:
        train(Tagger(Encoder()), batch_first_loader())
    assert observed.one("TD302").line == line_of(__file__, "self.rnn = nn.GRU(16, 16)  # built here")


def test_transformer_layer_built_time_first_and_fed_batch_first_is_flagged() -> None:
    layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0)
    with observing(SequenceFirstLayout) as observed:
        train(Tagger(layer), batch_first_loader())
    message = observed.one("TD302").message
    assert message.startswith("TransformerEncoderLayer `encoder` (batch_first=False)"), message


def test_batch_first_layers_are_not_flagged() -> None:
    with observing(SequenceFirstLayout) as observed:
        train(Tagger(nn.GRU(16, 16, batch_first=True)), batch_first_loader())
        train(Tagger(nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)), batch_first_loader())
    assert observed.codes == set()


def test_time_first_input_is_not_flagged() -> None:
    """Transposed before the layer, or collated time-first (pad_sequence's default)."""
    def time_first(items: list[tuple[torch.Tensor, torch.Tensor]]) -> tuple[torch.Tensor, torch.Tensor]:
        return pad_sequence([x for x, _ in items]), torch.stack([y for _, y in items])

    data = TensorDataset(torch.randn(48, 12, 16), torch.randint(0, 3, (48,)))
    with observing(SequenceFirstLayout) as observed:
        train(Tagger(nn.LSTM(16, 16), transpose=True), batch_first_loader())
        train(Tagger(nn.LSTM(16, 16), time_first=True), DataLoader(data, batch_size=8, collate_fn=time_first))
    assert observed.codes == set()
