"""TD566: an attribute asked of a DataParallel wrapper that only its model has, and `.module`
asked of a model that is not wrapped."""

from __future__ import annotations

from torch import nn

from tests.run.test_crash import explained, line_of


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 3)


def test_an_attribute_of_the_wrapped_model_asked_of_the_wrapper() -> None:
    def head_size() -> int:
        model = nn.DataParallel(Net())
        return model.fc.out_features

    finding = explained(head_size)
    assert finding.rule == "TD566" and finding.line == line_of("return model.fc.out_features", head_size)
    assert "`model` is a `DataParallel` around your `Net`" in finding.message and "`model.module.fc`" in finding.message


def test_module_asked_of_a_model_that_is_not_wrapped() -> None:
    def save() -> object:
        model = Net()
        return model.module.state_dict()

    finding = explained(save)
    assert finding.rule == "TD566" and "a plain `Net`" in finding.message
    assert 'getattr(model, "module", model)' in finding.hint


def test_an_attribute_neither_the_wrapper_nor_its_model_has_stays_the_generic_crash() -> None:
    def typo() -> int:
        model = nn.DataParallel(Net())
        return model.fc2.out_features

    assert explained(typo).rule == "TD001"
