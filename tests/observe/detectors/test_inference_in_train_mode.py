"""TD340 inference-in-train-mode, on both sides."""

from __future__ import annotations

import inspect

import torch
from torch import nn

from tests.observe.detectors.conftest import observing
from torchdoctor.observe.detectors.inference_in_train_mode import InferenceInTrainMode


def net(dropout: float = 0.3, track: bool = True) -> nn.Module:
    return nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16, track_running_stats=track), nn.ReLU(),
                         nn.Dropout(dropout), nn.Linear(16, 3))


def trained_weights() -> dict[str, torch.Tensor]:
    return net().state_dict()


def predict(model: nn.Module) -> list[int]:
    with torch.no_grad():
        return model(torch.randn(16, 8)).argmax(dim=1).tolist()  # the forward of the buggy side


def test_a_loaded_model_predicting_in_train_mode_is_flagged_at_the_call() -> None:
    with observing(InferenceInTrainMode) as observed:
        model = net()
        model.load_state_dict(trained_weights())
        predict(model)
        predict(model)
    finding = observed.one("TD340")
    assert finding.line == inspect.getsourcelines(predict)[1] + 2
    assert "1 (BatchNorm1d)" in finding.message and "3 (Dropout)" in finding.message  # the batch-norm and the dropout, by name
    assert "test_inference_in_train_mode.py" in finding.message  # where the weights were loaded


def test_without_autograd_off_it_is_inference_too() -> None:
    with observing(InferenceInTrainMode) as observed:
        model = net()
        model.load_state_dict(trained_weights())
        model(torch.randn(4, 8))
    assert observed.codes == {"TD340"}


def test_a_dropout_only_model_is_told_about_dropout_only() -> None:
    with observing(InferenceInTrainMode) as observed:
        model = nn.Sequential(nn.Linear(8, 16), nn.Dropout(0.5), nn.Linear(16, 3))
        model.load_state_dict(model.state_dict())
        predict(model)
    message = observed.one("TD340").message
    assert "dropout" in message and "batch-norm" not in message


def test_eval_after_loading_is_not_flagged() -> None:
    with observing(InferenceInTrainMode) as observed:
        model = net()
        model.load_state_dict(trained_weights())
        model.eval()
        predict(model)
    assert observed.codes == set()


def test_a_submodule_loaded_in_a_model_switched_to_eval_is_not_flagged() -> None:
    with observing(InferenceInTrainMode) as observed:
        model = nn.Sequential(net(), nn.Softmax(dim=1))
        model[0].load_state_dict(trained_weights())
        model.eval()
        with torch.no_grad():
            model(torch.randn(16, 8))
    assert observed.codes == set()


def test_monte_carlo_dropout_switched_on_with_train_is_not_flagged() -> None:
    with observing(InferenceInTrainMode) as observed:
        model = net()
        model.load_state_dict(trained_weights())
        model.train()  # on purpose: several stochastic passes
        samples = [predict(model) for _ in range(4)]
    assert observed.codes == set() and len(samples) == 4


def test_fine_tuning_after_loading_is_training_not_inference() -> None:
    with observing(InferenceInTrainMode) as observed:
        model = net()
        model.load_state_dict(trained_weights())
        predict(model)  # a look at the pretrained model before training: TD133's ground, not this rule's
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(3):
            optimizer.zero_grad()
            model(torch.randn(16, 8)).pow(2).mean().backward()
            optimizer.step()
    assert observed.codes == set()


def test_a_model_that_was_never_loaded_is_not_flagged() -> None:
    with observing(InferenceInTrainMode) as observed:
        predict(net())  # a shape check on a fresh model: no weights to predict with
    assert observed.codes == set()


def test_layers_whose_output_train_mode_does_not_change_are_not_flagged() -> None:
    with observing(InferenceInTrainMode) as observed:
        model = net(dropout=0.0, track=False)  # dropout 0, batch-norm without running statistics
        model.load_state_dict(model.state_dict())
        predict(model)
    assert observed.codes == set()
