"""TD360: a dataset whose samples the default collate cannot batch."""

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
