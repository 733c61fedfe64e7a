"""TD360: a dataset whose samples the default collate cannot batch; TD361: a loader unpacked as (index, batch)."""

from __future__ import annotations

import inspect

import pytest
from torch.utils.data import DataLoader, Dataset

from tests.run.test_crash import explained


class Records(Dataset):  # type: ignore[type-arg]
    def __len__(self) -> int:
        return 8

    def __getitem__(self, i: int) -> object:
        return {"id": i, "record": object()}


def return_line(cls: type) -> int:
    lines, start = inspect.getsourcelines(cls.__getitem__)  # type: ignore[attr-defined]
    return start + next(n for n, text in enumerate(lines) if text.strip().startswith("return"))


def test_a_type_it_cannot_batch_is_told_at_the_datasets_return() -> None:
    finding = explained(lambda: next(iter(DataLoader(Records(), batch_size=4))))
    assert finding.rule == "TD360" and finding.line == return_line(Records)
    assert finding.message.startswith("`Records.__getitem__` returns `object` values, which the DataLoader's default collate cannot batch")
    assert "collate_fn" in finding.hint


def test_pil_images_are_told_to_need_to_tensor() -> None:
    image = pytest.importorskip("PIL.Image")

    class Images(Dataset):  # type: ignore[type-arg]
        def __len__(self) -> int:
            return 4

        def __getitem__(self, i: int) -> object:
            return image.new("RGB", (8, 8)), i

    finding = explained(lambda: next(iter(DataLoader(Images(), batch_size=2))))
    assert finding.rule == "TD360" and "returns PIL images" in finding.message and "ToTensor()" in finding.hint


def test_a_loader_unpacked_as_index_and_batch_without_enumerate() -> None:
    import torch
    from torch.utils.data import TensorDataset

    loader = DataLoader(TensorDataset(torch.randn(32, 4), torch.randint(0, 2, (32,))), batch_size=8)

    def train() -> None:
        for i, (x, y) in loader:
            print(i, x.shape, y.shape)

    finding = explained(train)
    assert finding.rule == "TD361" and "`for i, (x, y) in loader` unpacks each batch as (index, batch)" in finding.message
    assert finding.hint == "Count the batches with enumerate: `for i, (x, y) in enumerate(loader):`."


def test_an_unpacking_error_of_another_loop_stays_the_generic_crash() -> None:
    pairs = [(1, 2, 3)]

    def loop() -> None:
        for i, (x, y) in pairs:
            print(i, x, y)

    assert explained(loop).rule == "TD001"
