"""TD578: a Python number, list or string where a line wants a tensor, pointed at the call that
passed it in when it was handed on as a parameter."""

from __future__ import annotations

import torch

from tests.run.test_crash import explained, line_of


def extract(table: torch.Tensor, t: torch.Tensor, shape: torch.Size) -> torch.Tensor:
    batch, *_ = t.shape
    return table.gather(-1, t).reshape(batch, *((1,) * (len(shape) - 1)))


def noised(x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    return x * extract(torch.linspace(0.9, 0.1, 10), t, x.shape)


def test_a_step_given_as_one_int_is_pointed_at_the_call_that_passed_it() -> None:
    def sample() -> object:
        steps = 5
        return noised(torch.randn(4, 3, 8, 8), steps)  # type: ignore[arg-type]

    finding = explained(sample)
    assert finding.rule == "TD578" and finding.line == line_of("return noised(torch.randn(4, 3, 8, 8), steps)", sample)
    assert "this call passes `steps`, an int (5), where `extract` needs a tensor: it asks for its `.shape` (as `t`)" in finding.message


def test_a_list_of_tensors_asked_for_its_size_at_the_line() -> None:
    def step() -> object:
        batch = [torch.zeros(3), torch.zeros(3)]
        return batch.size(0)  # type: ignore[attr-defined]

    finding = explained(step)
    assert finding.rule == "TD578" and finding.line == line_of("return batch.size(0)", step)
    assert "`batch` is a list (2 tensors of shape [3]), not a tensor, where this line asks for its `.size`" in finding.message


def test_an_attribute_tensors_do_not_have_stays_the_generic_crash() -> None:
    def step() -> object:
        count = 3
        return count.lower()  # type: ignore[attr-defined]

    assert explained(step).rule == "TD001"
