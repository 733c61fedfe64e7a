"""The order of training samples: TD141 (DistributedSampler without set_epoch) and TD451
(a non-shuffling loader over label-sorted data), each on both sides."""

from __future__ import annotations

import torch
import torch.distributed as dist
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

from tests.observe.detectors.conftest import line_of, observing
from torchdoctor.observe.detectors.order import LabelOrder, LoaderOrder, labels_of

HERE = __file__


def train_epochs(loader: DataLoader, epochs: int = 3, sampler=None, epoch_of=lambda e: e, validation=None) -> None:  # type: ignore[no-untyped-def]
    model = nn.Linear(8, 4)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(epochs):
        if sampler is not None:
            sampler.set_epoch(epoch_of(epoch))
        for x, y in loader:  # the training loop
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
        if validation is not None:
            with torch.no_grad():
                for x, _ in validation:  # the validation loop
                    model(x)


def dataset(n: int = 64, sorted_labels: bool = False) -> TensorDataset:
    labels = torch.arange(n) * 4 // n if sorted_labels else torch.randint(0, 4, (n,), generator=torch.Generator().manual_seed(0))
    return TensorDataset(torch.randn(n, 8), labels)


# --- TD141 ------------------------------------------------------------------------------


def test_distributed_sampler_without_set_epoch_is_flagged_at_the_loop() -> None:
    data = dataset()
    sampler = DistributedSampler(data, num_replicas=1, rank=0)
    with observing(LoaderOrder) as observed:
        train_epochs(DataLoader(data, batch_size=16, sampler=sampler))
    finding = observed.one("TD141")
    assert finding.line == line_of(HERE, "# the training loop")
    assert "epoch is still 0" in finding.message


def test_set_epoch_every_epoch_is_not_flagged() -> None:
    data = dataset()
    sampler = DistributedSampler(data, num_replicas=1, rank=0)
    with observing(LoaderOrder) as observed:
        train_epochs(DataLoader(data, batch_size=16, sampler=sampler), sampler=sampler)
    assert observed.codes == set()


def test_set_epoch_with_a_constant_is_flagged() -> None:
    data = dataset()
    sampler = DistributedSampler(data, num_replicas=1, rank=0)
    with observing(LoaderOrder) as observed:
        train_epochs(DataLoader(data, batch_size=16, sampler=sampler), sampler=sampler, epoch_of=lambda e: 3)
    assert "stays at 3" in observed.one("TD141").message


def test_validation_sampler_without_set_epoch_is_not_flagged() -> None:
    """Evaluation order does not matter: only samplers of training loaders are checked."""
    train, val = dataset(), dataset()
    sampler = DistributedSampler(train, num_replicas=1, rank=0)
    validation = DataLoader(val, batch_size=16, sampler=DistributedSampler(val, num_replicas=1, rank=0))
    with observing(LoaderOrder) as observed:
        train_epochs(DataLoader(train, batch_size=16, sampler=sampler), sampler=sampler, validation=validation)
    assert observed.codes == set()


def test_with_a_real_process_group(tmp_path) -> None:  # type: ignore[no-untyped-def]
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    try:
        data = dataset()
        sampler = DistributedSampler(data)
        with observing(LoaderOrder) as observed:
            train_epochs(DataLoader(data, batch_size=16, sampler=sampler))
        assert "TD141" in observed.codes
    finally:
        dist.destroy_process_group()


# --- TD451 ------------------------------------------------------------------------------


def test_label_sorted_data_without_shuffle_is_flagged_at_the_loader() -> None:
    data = dataset(256, sorted_labels=True)
    with observing(LoaderOrder) as observed:
        loader = DataLoader(data, batch_size=16)  # never shuffles
        train_epochs(loader, epochs=1)
    finding = observed.one("TD451")
    assert finding.line == line_of(HERE, "# never shuffles")
    assert "from 0 to 3" in finding.message


def test_label_sorted_data_with_shuffle_is_not_flagged() -> None:
    with observing(LoaderOrder) as observed:
        train_epochs(DataLoader(dataset(256, sorted_labels=True), batch_size=16, shuffle=True), epochs=1)
    assert observed.codes == set()


def test_sorted_validation_data_is_not_flagged() -> None:
    with observing(LoaderOrder) as observed:
        train_epochs(DataLoader(dataset(64), batch_size=16, shuffle=True), epochs=1,
                     validation=DataLoader(dataset(256, sorted_labels=True), batch_size=16))
    assert observed.codes == set()


def test_pre_shuffled_data_read_in_order_is_not_flagged() -> None:
    with observing(LoaderOrder) as observed:
        train_epochs(DataLoader(dataset(256), batch_size=16), epochs=1)
    assert observed.codes == set()


def test_regression_targets_are_not_labels() -> None:
    data = TensorDataset(torch.randn(128, 8), torch.linspace(0, 1, 128))
    assert labels_of(next(iter(DataLoader(data, batch_size=16)))) is None


def test_rare_positives_in_random_order_are_not_sorted() -> None:
    """Imbalanced labels read in a random order: the odd 1 is followed by 0s again."""
    order = LabelOrder()
    labels = torch.zeros(512, dtype=torch.long)
    labels[[40, 300]] = 1
    for batch in labels.split(32):
        order.add(batch)
    assert not order.sorted(32)


def test_one_class_after_another_is_sorted() -> None:
    order = LabelOrder()
    for batch in (torch.arange(512) // 128).split(32):
        order.add(batch)
    assert order.sorted(32)
    descending = LabelOrder()
    for batch in (3 - torch.arange(512) // 128).split(32):
        descending.add(batch)
    assert descending.sorted(32)


def test_evaluating_on_the_training_loader_within_an_epoch_is_not_flagged() -> None:
    """The same loader iterated twice per epoch (train, then measure training accuracy)."""
    data = dataset()
    sampler = DistributedSampler(data, num_replicas=1, rank=0)
    loader = DataLoader(data, batch_size=16, sampler=sampler)
    with observing(LoaderOrder) as observed:
        train_epochs(loader, epochs=3, sampler=sampler, validation=loader)
    assert observed.codes == set()
