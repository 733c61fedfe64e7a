"""The words of findings: lists of ranks."""

from __future__ import annotations

import pytest

from torchdoctor.core.wording import ranks_named, ranks_text


@pytest.mark.parametrize(("numbers", "text"), [([0], "0"), ([0, 1, 2, 5], "0-2, 5"), ([3, 1], "1, 3"), ([], "")])
def test_ranks_text(numbers: list[int], text: str) -> None:
    assert ranks_text(numbers) == text


def test_ranks_named() -> None:
    assert ranks_named([2]) == "rank 2" and ranks_named([4, 0, 1, 2]) == "ranks 0-2, 4"
