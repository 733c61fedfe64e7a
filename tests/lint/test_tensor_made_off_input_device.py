"""TD203's facts, seen on this torch with the `meta` device standing in for a GPU (this machine has
none): a CPU tensor of at least one dimension cannot meet a tensor of another device in the ops the
rule counts; a 0-dim one and an index can. And the files it leaves alone."""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from tests.lint.conftest import lint_file
from torchdoctor.linter.checks.tensor_made_off_input_device import MIXING_COMPARISONS, MIXING_OPERATORS

OPERATORS: dict[type, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.Pow: operator.pow, ast.Mod: operator.mod,
    ast.BitAnd: operator.and_, ast.BitOr: operator.or_, ast.BitXor: operator.xor,
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt,
    ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
}
_BITWISE = {ast.BitAnd, ast.BitOr, ast.BitXor}
ON_ONE_DEVICE = {
    "torch.cat": lambda a, b: torch.cat((a, b)),
    "torch.stack": lambda a, b: torch.stack((a, b)),
    "torch.where": lambda a, b: torch.where(b > 0, a, a),
    "masked_fill": lambda a, b: a.masked_fill(b > 0, 0),
}


@pytest.mark.parametrize("op", [*MIXING_OPERATORS, *MIXING_COMPARISONS], ids=lambda op: op.__name__)
def test_every_operator_counted_needs_both_on_one_device(op: type) -> None:
    apply = OPERATORS[op]
    device = torch.ones(3, dtype=torch.bool if op in _BITWISE else torch.float32, device="meta")
    cpu = torch.ones(3, dtype=device.dtype)
    for left, right in ((device, cpu), (cpu, device)):
        with pytest.raises(RuntimeError, match="device"):
            apply(left, right)
    apply(device, torch.tensor(True if op in _BITWISE else 2.0))  # a 0-dim CPU tensor is a scalar to any device


@pytest.mark.parametrize("name", sorted(ON_ONE_DEVICE))
def test_the_functions_counted_need_both_on_one_device(name: str) -> None:
    with pytest.raises(RuntimeError, match="device"):
        ON_ONE_DEVICE[name](torch.ones(3, device="meta"), torch.ones(3))


def test_an_index_made_on_the_cpu_may_index_another_device() -> None:
    values = torch.ones(4, 2, device="meta")
    assert values[torch.randperm(4)].device.type == "meta"


def test_the_docs_example_fails_off_the_cpu_and_its_fix_does_not() -> None:
    boxes = torch.ones(3, 4, device="meta")
    with pytest.raises(RuntimeError, match="device"):
        torch.cat((boxes.clone(), torch.zeros(boxes.shape[0], 1, dtype=boxes.dtype)), dim=1)
    made = torch.zeros(boxes.shape[0], 1, dtype=boxes.dtype, device=boxes.device)
    assert torch.cat((boxes.clone(), made), dim=1).shape == (3, 5)


def test_a_file_that_never_mentions_devices_or_sets_the_default_one_is_left_alone(tmp_path: Path) -> None:
    body = ("device = 'cuda'\n\n\nclass Angles(nn.Module):\n    def forward(self, boxes):\n        angles = torch.zeros(boxes.size(0), 1)\n"
            "        return torch.cat((boxes, angles), dim=1)\n")
    plain = tmp_path / "plain.py"
    plain.write_text("import torch\nfrom torch import nn\n\n\n" + body, encoding="utf-8")
    assert [f.rule for f in lint_file(plain)] == ["TD203"]
    unaware = tmp_path / "unaware.py"
    unaware.write_text(plain.read_text(encoding="utf-8").replace("device = 'cuda'", ""), encoding="utf-8")
    assert [f.rule for f in lint_file(unaware)] == []
    setting = tmp_path / "setting.py"
    setting.write_text("import torch\nfrom torch import nn\n\ntorch.set_default_device('cuda')\n\n" + body, encoding="utf-8")
    assert [f.rule for f in lint_file(setting)] == []
