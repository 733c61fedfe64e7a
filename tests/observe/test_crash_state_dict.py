"""TD565: a strict `load_state_dict` that raised, explained from the keys torch compared."""

from __future__ import annotations

import torch
from torch import nn

from tests.run.test_crash import explained, line_of


def mlp(classes: int = 3) -> nn.Module:
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, classes))


def test_a_checkpoint_saved_from_dataparallel_is_told_by_its_module_prefix() -> None:
    def load() -> None:
        state = nn.DataParallel(mlp()).state_dict()
        mlp().load_state_dict(state)

    finding = explained(load)
    assert finding.rule == "TD565" and finding.line == line_of("mlp().load_state_dict(state)", load)
    assert "`module.0.weight` for `0.weight`" in finding.message and "DataParallel" in finding.message
    assert 'removeprefix("module.")' in finding.hint


def test_a_checkpoint_of_a_compiled_model_is_told_by_its_orig_mod_prefix() -> None:
    def load() -> None:
        state = {"_orig_mod." + key: value for key, value in mlp().state_dict().items()}  # what a compiled model saves
        mlp().load_state_dict(state)

    finding = explained(load)
    assert finding.rule == "TD565" and "torch.compile" in finding.message


def test_a_wrapper_given_the_inner_models_weights_is_told_to_load_into_the_inner_model() -> None:
    class Wrapper(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.backbone = mlp()

    def load() -> None:
        Wrapper().load_state_dict(mlp().state_dict())

    finding = explained(load)
    assert finding.rule == "TD565" and "`backbone.0.weight` for `0.weight`" in finding.message
    assert "model.backbone.load_state_dict(state)" in finding.hint


def test_a_whole_checkpoint_is_told_to_give_its_weights() -> None:
    def load() -> None:
        checkpoint = {"epoch": 3, "state_dict": mlp().state_dict(), "optimizer": {}}
        mlp().load_state_dict(checkpoint)

    finding = explained(load)
    assert finding.rule == "TD565" and '["state_dict"]' in finding.message
    assert 'checkpoint["state_dict"]' in finding.hint


def test_a_head_of_another_size_names_the_tensors_and_their_shapes() -> None:
    def load() -> None:
        mlp(classes=5).load_state_dict(mlp(classes=3).state_dict())

    finding = explained(load)
    assert finding.rule == "TD565"
    assert "`2.weight` is [3, 16] in the checkpoint, [5, 16] in the model" in finding.message
    assert '{"2.weight", "2.bias"}' in finding.hint


def test_keys_that_show_no_cause_stay_the_generic_crash() -> None:
    def load() -> None:
        mlp().load_state_dict({"encoder.weight": torch.zeros(2), "decoder.weight": torch.zeros(2)})

    assert explained(load).rule == "TD001"


def test_a_whole_model_or_the_state_dict_method_given_instead_of_a_state_dict() -> None:
    def whole() -> None:
        mlp().load_state_dict(mlp())  # type: ignore[arg-type]

    def method() -> None:
        mlp().load_state_dict(mlp().state_dict)  # type: ignore[arg-type]

    assert explained(whole).message.startswith("`load_state_dict` was given a whole `Sequential` model, not a state dict")
    finding = explained(method)
    assert finding.rule == "TD565" and "the method `Sequential.state_dict` itself" in finding.message
