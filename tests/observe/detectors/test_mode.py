"""train()/eval() mistakes: TD131, TD130, TD132 and TD161, each on both sides."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from tests.lab import LAB
from tests.observe.detectors.conftest import line_of, observing, run_lab
from tests.run.conftest import torchdoctor_run
from torchdoctor.observe.detectors.mode import (
    DropoutInEval,
    EvalGraphs,
    EvalModeTraining,
    EvaluationInTrainMode,
    FrozenBatchNormDrift,
)

HERE = __file__


def fit(model: nn.Module, steps: int = 3, before_step=None) -> None:  # type: ignore[no-untyped-def]
    optimizer = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.01)
    for _ in range(steps):
        optimizer.zero_grad()
        model(torch.randn(8, 6)).pow(2).mean().backward()
        if before_step is not None:
            before_step()
        optimizer.step()


# --- TD131 ------------------------------------------------------------------------------


def test_lab_eval_never_switched_back_points_where_train_goes() -> None:
    """validate() ends inside a `with` block: `model.train()` goes at the top of each epoch."""
    observed = run_lab("16_eval_never_switched_back.py", (EvalModeTraining,), epochs=6)
    finding = observed.one("TD131")
    assert finding.line == line_of(LAB / "16_eval_never_switched_back.py", "for x, y in loader:")
    eval_line = line_of(LAB / "16_eval_never_switched_back.py", "    model.eval()")
    assert f"`model.eval()` at examples/lab/16_eval_never_switched_back.py:{eval_line} is not undone before `optimizer.step()`" in finding.message
    assert finding.count > 1


def test_lab_fixed_twin_switches_back() -> None:
    assert run_lab("16_eval_never_switched_back.py", (EvalModeTraining,), fixed=True, epochs=6).codes == set()


def test_batchnorm_with_trainable_weights_in_eval_mode_is_flagged() -> None:
    model = nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.Linear(8, 1))
    with observing(EvalModeTraining) as observed:
        model.eval()  # left in eval mode
        fit(model)
    assert observed.one("TD131").line == line_of(HERE, "model.eval()  # left in eval mode")


def test_eval_mode_of_the_model_inside_a_wrapper_is_flagged() -> None:
    model = nn.Sequential(nn.Linear(6, 8), nn.Dropout(0.5), nn.Linear(8, 1))
    wrapper = nn.DataParallel(model)  # on a machine without GPUs it just calls the module
    with observing(EvalModeTraining) as observed:
        wrapper(torch.randn(2, 6))
        model.eval()
        fit(wrapper)
    assert "TD131" in observed.codes


def test_frozen_batchnorm_kept_in_eval_mode_on_purpose_is_not_flagged() -> None:
    """Linear probing: the model is in eval mode, its batch-norm frozen, no dropout."""
    model = nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.Linear(8, 1))
    model[1].requires_grad_(False)
    with observing(EvalModeTraining) as observed:
        model.eval()
        fit(model)
    assert observed.codes == set()


def test_models_without_dropout_or_batchnorm_may_train_in_eval_mode() -> None:
    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 1))
    with observing(EvalModeTraining) as observed:
        model.eval()
        fit(model)
    assert observed.codes == set()


def test_submodule_in_eval_mode_inside_a_training_model_is_deliberate() -> None:
    """`norm_eval`: the model trains, some batch-norm layers are kept in eval mode."""
    model = nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.Dropout(0.2), nn.Linear(8, 1))
    with observing(EvalModeTraining) as observed:
        model.train()
        model[1].eval()
        fit(model)
    assert observed.codes == set()


# --- TD130 ------------------------------------------------------------------------------


class FunctionalDropout(nn.Module):
    def __init__(self, mode: str) -> None:
        super().__init__()
        self.fc = nn.Linear(6, 6)
        self.mode = mode

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.mode == "default":
            x = F.dropout(x, p=0.5)  # the default training=True
        elif self.mode == "follows":
            x = F.dropout(x, p=0.5, training=self.training)
        elif self.mode == "monte-carlo":
            x = F.dropout(x, p=0.5, training=True)
        else:
            x = F.dropout(x, p=0.0)
        return self.fc(x)


def evaluate(model: nn.Module) -> None:
    model.eval()
    with torch.no_grad():
        model(torch.randn(4, 6))
    model.train()


def test_lab_functional_dropout_is_flagged_at_its_line() -> None:
    observed = run_lab("04_functional_dropout_in_eval.py", (DropoutInEval,), steps=100)
    finding = observed.one("TD130")
    assert finding.line == line_of(LAB / "04_functional_dropout_in_eval.py", "F.dropout(h, p=0.5)")
    assert "`F.dropout(h, p=0.5)`" in finding.message


def test_lab_fixed_twin_passes_training() -> None:
    assert run_lab("04_functional_dropout_in_eval.py", (DropoutInEval,), fixed=True, steps=100).codes == set()


def test_default_training_is_flagged_only_when_the_module_is_in_eval_mode() -> None:
    model = FunctionalDropout("default")
    with observing(DropoutInEval) as observed:
        fit(model)
    assert observed.codes == set()  # in train mode the default does what it should
    with observing(DropoutInEval) as observed:
        fit(model)
        evaluate(model)
    assert observed.one("TD130").line == line_of(HERE, "x = F.dropout(x, p=0.5)  # the default")


def test_explicit_training_and_zero_p_are_not_flagged() -> None:
    for mode in ("follows", "monte-carlo", "zero"):
        model = FunctionalDropout(mode)
        with observing(DropoutInEval) as observed:
            fit(model)
            evaluate(model)
        assert observed.codes == set(), mode


def test_nn_dropout_modules_are_not_flagged() -> None:
    model = nn.Sequential(nn.Linear(6, 6), nn.Dropout(0.5), nn.Linear(6, 1))
    with observing(DropoutInEval) as observed:
        fit(model)
        evaluate(model)
    assert observed.codes == set()


# --- TD132 ------------------------------------------------------------------------------


def test_lab_frozen_batchnorm_drift_points_at_model_train() -> None:
    observed = run_lab("10_frozen_batchnorm_drift.py", (FrozenBatchNormDrift,), steps=20)
    finding = observed.one("TD132")
    assert finding.line == line_of(LAB / "10_frozen_batchnorm_drift.py", "    model.train()")
    assert "`backbone.1`" in finding.message


def test_lab_fixed_twin_keeps_frozen_batchnorm_in_eval_mode() -> None:
    assert run_lab("10_frozen_batchnorm_drift.py", (FrozenBatchNormDrift,), fixed=True, steps=20).codes == set()


def test_trainable_batchnorm_is_not_flagged() -> None:
    model = nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.Linear(8, 1))
    with observing(FrozenBatchNormDrift) as observed:
        fit(model, steps=5)
    assert observed.codes == set()


def test_batchnorm_frozen_later_is_seen_on_a_later_check() -> None:
    model = nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    with observing(FrozenBatchNormDrift) as observed:
        for step in range(40):
            if step == 10:
                model[1].requires_grad_(False)
            optimizer.zero_grad()
            model(torch.randn(8, 6)).pow(2).mean().backward()
            optimizer.step()
    assert "TD132" in observed.codes


def train_head_on_frozen_backbone(backbone_mode: str, steps: int = 40) -> None:
    backbone = nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.ReLU())
    backbone.requires_grad_(False)
    getattr(backbone, backbone_mode)()  # the backbone's mode
    head = nn.Linear(8, 1)
    optimizer = torch.optim.SGD(head.parameters(), lr=0.01)
    for _ in range(steps):
        with torch.no_grad():
            features = backbone(torch.randn(8, 6))
        optimizer.zero_grad()
        head(features).pow(2).mean().backward()
        optimizer.step()


def test_frozen_backbone_outside_the_optimizer_in_train_mode_is_flagged() -> None:
    with observing(FrozenBatchNormDrift) as observed:
        train_head_on_frozen_backbone("train")
    finding = observed.one("TD132")
    assert finding.line == line_of(__file__, "getattr(backbone, backbone_mode)()")


def test_frozen_backbone_outside_the_optimizer_in_eval_mode_is_not_flagged() -> None:
    with observing(FrozenBatchNormDrift) as observed:
        train_head_on_frozen_backbone("eval")
    assert observed.codes == set()


def test_gan_discriminator_frozen_during_the_generator_step_is_not_flagged() -> None:
    """Its own optimizer trains it: frozen only while the generator steps, by design."""
    generator = nn.Sequential(nn.Linear(4, 6))
    discriminator = nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 1))
    opt_g = torch.optim.Adam(generator.parameters(), lr=1e-3)
    opt_d = torch.optim.Adam(discriminator.parameters(), lr=1e-3)
    with observing(FrozenBatchNormDrift) as observed:
        for _ in range(40):
            discriminator.requires_grad_(True)
            opt_d.zero_grad()
            fake = generator(torch.randn(8, 4))
            (discriminator(fake.detach()).mean() - discriminator(torch.randn(8, 6)).mean()).backward()
            opt_d.step()
            discriminator.requires_grad_(False)
            opt_g.zero_grad()
            (-discriminator(generator(torch.randn(8, 4))).mean()).backward()
            opt_g.step()
    assert observed.codes == set()


# --- TD133 ------------------------------------------------------------------------------


def train_then_validate(model: nn.Module, switch: str | None, batches: int = 4, epochs: int = 2) -> None:
    """Train a few steps, then validate under no_grad after `model.<switch>()` (or no switch)."""
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(epochs):
        model.train()
        for _ in range(5):
            optimizer.zero_grad()
            model(torch.randn(8, 6)).pow(2).mean().backward()
            optimizer.step()
        if switch is not None:
            getattr(model, switch)()
        with torch.no_grad():  # the validation block
            for _ in range(batches):
                model(torch.randn(8, 6))  # the validation forward


def test_validation_in_train_mode_with_dropout_is_flagged_where_eval_goes() -> None:
    """The function trains too: `model.eval()` goes before its no-grad block."""
    with observing(EvaluationInTrainMode) as observed:
        train_then_validate(nn.Sequential(nn.Linear(6, 8), nn.Dropout(0.3), nn.Linear(8, 1)), switch=None)
    finding = observed.one("TD133")
    assert finding.line == line_of(__file__, "with torch.no_grad():  # the validation block")
    forward = line_of(__file__, "model(torch.randn(8, 6))  # the validation forward")
    assert f"(called at line {forward})" in finding.message
    assert "dropout keeps zeroing activations" in finding.message and "model.eval()" in finding.hint


def test_validation_in_train_mode_with_batchnorm_is_flagged() -> None:
    with observing(EvaluationInTrainMode) as observed:
        train_then_validate(nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.Linear(8, 1)), switch=None)
    assert "running statistics" in observed.one("TD133").message


def test_validation_in_eval_mode_is_not_flagged() -> None:
    with observing(EvaluationInTrainMode) as observed:
        train_then_validate(nn.Sequential(nn.Linear(6, 8), nn.Dropout(0.3), nn.BatchNorm1d(8), nn.Linear(8, 1)), switch="eval")
    assert observed.codes == set()


def test_inner_model_switched_to_eval_inside_a_wrapper_is_not_flagged() -> None:
    """`model.module.eval()` under DataParallel/DDP: the wrapper still says training=True."""
    model = nn.DataParallel(nn.Sequential(nn.Linear(6, 8), nn.Dropout(0.3), nn.Linear(8, 1)))
    with observing(EvaluationInTrainMode) as observed:
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        for _ in range(5):
            optimizer.zero_grad()
            model(torch.randn(8, 6)).pow(2).mean().backward()
            optimizer.step()
        model.module.eval()
        with torch.no_grad():
            for _ in range(4):
                model(torch.randn(8, 6))
    assert observed.codes == set()


def test_train_mode_switched_on_after_the_last_step_is_meant() -> None:
    """Monte Carlo dropout: `model.train()` right before the sampling loop."""
    with observing(EvaluationInTrainMode) as observed:
        train_then_validate(nn.Sequential(nn.Linear(6, 8), nn.Dropout(0.3), nn.Linear(8, 1)), switch="train")
    assert observed.codes == set()


def test_models_that_behave_the_same_in_both_modes_are_not_flagged() -> None:
    with observing(EvaluationInTrainMode) as observed:
        train_then_validate(nn.Sequential(nn.Linear(6, 8), nn.Dropout(0.0), nn.ReLU(), nn.Linear(8, 1)), switch=None)
    assert observed.codes == set()


def train_by_hand_then_validate(model: nn.Module, switch: str | None, target_passes: int = 0) -> None:
    """No torch.optim: the weights are updated by hand after each backward() (word_language_model),
    with `target_passes` no-grad forwards of the model in each step; then a validation."""
    for _ in range(2):
        model.train()
        for _ in range(5):
            model.zero_grad()
            x = torch.randn(8, 6)
            with torch.no_grad():
                for _ in range(target_passes):
                    x = x + 0.1 * model(x).mean()
            model(x).pow(2).mean().backward()
            with torch.no_grad():
                for p in model.parameters():
                    p.add_(p.grad, alpha=-0.01)
        if switch is not None:
            getattr(model, switch)()
        with torch.no_grad():  # the hand-trained validation
            for _ in range(4):
                model(torch.randn(8, 6))


def test_validation_in_train_mode_of_a_model_updated_by_hand_is_flagged() -> None:
    with observing(EvaluationInTrainMode) as observed:
        train_by_hand_then_validate(nn.Sequential(nn.Linear(6, 8), nn.Dropout(0.3), nn.Linear(8, 6)), switch=None)
    assert observed.one("TD133").line == line_of(__file__, "with torch.no_grad():  # the hand-trained validation")


def test_validation_in_eval_mode_of_a_model_updated_by_hand_is_not_flagged() -> None:
    with observing(EvaluationInTrainMode) as observed:
        train_by_hand_then_validate(nn.Sequential(nn.Linear(6, 8), nn.Dropout(0.3), nn.Linear(8, 6)), switch="eval")
    assert observed.codes == set()


def test_no_grad_forwards_inside_each_hand_written_step_are_part_of_training() -> None:
    """Two no-grad passes per backward() (a target from the model itself), counted per backward()
    where no optimizer counts steps; the validation is in eval mode."""
    with observing(EvaluationInTrainMode) as observed:
        train_by_hand_then_validate(nn.Sequential(nn.Linear(6, 8), nn.Dropout(0.3), nn.Linear(8, 6)), switch="eval", target_passes=2)
    assert observed.codes == set()


def test_one_no_grad_forward_per_step_is_part_of_training() -> None:
    """A GAN's generated batch, pseudo-labels: one no-grad forward of the trained model per step."""
    generator = nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6), nn.Dropout(0.2))
    critic = nn.Sequential(nn.Linear(6, 1))
    opt_g = torch.optim.SGD(generator.parameters(), lr=0.01)
    opt_c = torch.optim.SGD(critic.parameters(), lr=0.01)
    with observing(EvaluationInTrainMode) as observed:
        for _ in range(30):
            with torch.no_grad():
                fake = generator(torch.randn(8, 4))
            opt_c.zero_grad()
            critic(fake).mean().backward()
            opt_c.step()
            opt_g.zero_grad()
            (-critic(generator(torch.randn(8, 4))).mean()).backward()
            opt_g.step()
    assert observed.codes == set()


def dropout_net() -> nn.Module:
    return nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Dropout(0.3), nn.Linear(8, 1))


def full_batch_epochs(model: nn.Module, epochs: int = 3, switch: bool = False) -> None:
    """The whole data set is one batch: one step per epoch, then one no-grad validation forward."""
    x, y, x_val, y_val = torch.randn(32, 6), torch.randn(32, 1), torch.randn(16, 6), torch.randn(16, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(epochs):
        if switch:
            model.train()
        optimizer.zero_grad()
        F.mse_loss(model(x), y).backward()
        optimizer.step()
        if switch:
            model.eval()
        with torch.no_grad():  # the full-batch validation
            F.mse_loss(model(x_val), y_val)  # the full-batch validation forward


def test_one_full_batch_validation_forward_per_epoch_is_flagged() -> None:
    with observing(EvaluationInTrainMode) as observed:
        full_batch_epochs(dropout_net())
    finding = observed.one("TD133")
    assert finding.line == line_of(__file__, "with torch.no_grad():  # the full-batch validation")
    forward = line_of(__file__, "F.mse_loss(model(x_val), y_val)  # the full-batch validation forward")
    assert f"(called at line {forward})" in finding.message and "one forward pass" in finding.message


def test_one_full_batch_validation_forward_in_eval_mode_is_not_flagged() -> None:
    with observing(EvaluationInTrainMode) as observed:
        full_batch_epochs(dropout_net(), switch=True)
    assert observed.codes == set()


def test_one_validation_forward_seen_once_is_not_yet_flagged() -> None:
    """Once is not a habit: a forward after the last step may be a final check on purpose."""
    with observing(EvaluationInTrainMode) as observed:
        full_batch_epochs(dropout_net(), epochs=1)
    assert observed.codes == set()


def test_a_full_batch_validation_of_a_model_without_dropout_or_batchnorm_is_not_flagged() -> None:
    with observing(EvaluationInTrainMode) as observed:
        full_batch_epochs(nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 1)))
    assert observed.codes == set()


def train_epoch(model: nn.Module, optimizer: torch.optim.Optimizer) -> None:
    for _ in range(4):
        optimizer.zero_grad()
        model(torch.randn(8, 6)).pow(2).mean().backward()
        optimizer.step()


def evaluate_in_one_batch(model: nn.Module) -> float:
    with torch.no_grad():  # evaluate_in_one_batch's block
        return float(model(torch.randn(64, 6)).pow(2).mean())


def test_one_validation_forward_after_each_epoch_of_batches_is_flagged() -> None:
    """Mini-batches within the epoch, one forward over the whole validation set after them."""
    model = nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    with observing(EvaluationInTrainMode) as observed:
        for _ in range(3):
            for _ in range(4):
                optimizer.zero_grad()
                model(torch.randn(8, 6)).pow(2).mean().backward()
                optimizer.step()
            with torch.no_grad():  # after the epoch's batches
                model(torch.randn(64, 6))
    finding = observed.one("TD133")
    assert finding.line == line_of(__file__, "with torch.no_grad():  # after the epoch's batches")
    assert "running statistics" in finding.message


def test_an_evaluation_function_called_after_the_training_function_is_flagged() -> None:
    model = dropout_net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    with observing(EvaluationInTrainMode) as observed:
        for _ in range(3):
            train_epoch(model, optimizer)
            evaluate_in_one_batch(model)
    assert observed.one("TD133").line == line_of(__file__, "with torch.no_grad():  # evaluate_in_one_batch's block")


def test_targets_from_the_model_itself_before_each_backward_are_part_of_training() -> None:
    """Pseudo-labels (or a mean-teacher target) from a no-grad forward of the model being trained,
    in train mode on purpose: a backward() follows it in the same iteration."""
    model = dropout_net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    with observing(EvaluationInTrainMode) as observed:
        for _ in range(6):
            x = torch.randn(8, 6)
            with torch.no_grad():
                target = model(x + 0.1 * torch.randn(8, 6))
            optimizer.zero_grad()
            F.mse_loss(model(x), target).backward()
            optimizer.step()
    assert observed.codes == set()


def test_a_sample_drawn_every_few_steps_inside_the_training_loop_is_not_flagged() -> None:
    """The DCGAN tutorial's `if iters % 500 == 0: with torch.no_grad(): fake = netG(fixed_noise)`:
    a generator sampled in train mode (its batch-norm uses the batch's statistics) while it trains."""
    generator = nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6), nn.Linear(6, 6))
    optimizer = torch.optim.SGD(generator.parameters(), lr=0.01)
    fixed = torch.randn(8, 4)
    with observing(EvaluationInTrainMode) as observed:
        for step in range(12):
            optimizer.zero_grad()
            generator(torch.randn(8, 4)).pow(2).mean().backward()
            optimizer.step()
            if step % 4 == 0:
                with torch.no_grad():
                    generator(fixed)
    assert observed.codes == set()


def act(policy: nn.Module, state: torch.Tensor) -> int:
    with torch.no_grad():
        return int(policy(state).argmax())


def test_acting_before_each_update_is_part_of_training() -> None:
    """A DQN's action from the policy network, one per environment step, before the update."""
    policy = dropout_net()
    optimizer = torch.optim.SGD(policy.parameters(), lr=0.01)
    with observing(EvaluationInTrainMode) as observed:
        for _ in range(8):
            state = torch.randn(1, 6)
            action = act(policy, state)
            optimizer.zero_grad()
            (policy(state).sum() * (action + 1)).backward()
            optimizer.step()
    assert observed.codes == set()


FULL_BATCH_SCRIPT = """\
import torch
from torch import nn

torch.manual_seed(0)
X, y = torch.randn(64, 8), torch.randn(64, 1)
X_val, y_val = torch.randn(32, 8), torch.randn(32, 1)
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Dropout(0.2), nn.Linear(32, 1))
loss_fn = nn.MSELoss()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for epoch in range(20):
    {train}
    optimizer.zero_grad()
    loss = loss_fn(model(X), y)
    loss.backward()
    optimizer.step()
    {evaluate}
    with torch.no_grad():
        val_loss = loss_fn(model(X_val), y_val)
    print(epoch, loss.item(), val_loss.item())
"""


@pytest.mark.slow
@pytest.mark.parametrize("switched", [False, True])
def test_full_batch_validation_under_torchdoctor_run(switched: bool, write) -> None:  # type: ignore[no-untyped-def]
    """The shape a new user writes: TD133 at the `with` block, and nothing once `model.eval()`
    and `model.train()` are there."""
    source = FULL_BATCH_SCRIPT.format(train="model.train()" if switched else "pass",
                                      evaluate="model.eval()" if switched else "pass")
    script = write("train.py", source)
    ran = torchdoctor_run(str(script), cwd=script.parent)
    assert ran.report["meta"]["exit_status"] == 0
    if switched:
        assert ran.codes == set()
    else:
        assert ran.codes == {"TD133"}
        assert ran.finding("TD133")["line"] == line_of(script, "with torch.no_grad():")


# --- TD161 ------------------------------------------------------------------------------


def validate(model: nn.Module, batches: int, no_grad: bool) -> float:
    model.eval()
    total = 0.0
    for _ in range(batches):
        if no_grad:
            with torch.no_grad():
                total += model(torch.randn(4, 6)).sum().item()
        else:
            total += model(torch.randn(4, 6)).sum().item()  # builds a graph
    model.train()
    return total


def test_evaluation_with_autograd_on_is_flagged_at_the_forward_call() -> None:
    model = nn.Sequential(nn.Linear(6, 6), nn.Dropout(0.1), nn.Linear(6, 1))
    with observing(EvalGraphs) as observed:
        fit(model)
        validate(model, batches=3, no_grad=False)
        fit(model)
    finding = observed.one("TD161")
    assert finding.line == line_of(HERE, "# builds a graph")
    assert "`validate()`" in finding.message and "@torch.no_grad()" in finding.hint


def test_evaluation_under_no_grad_is_not_flagged() -> None:
    model = nn.Sequential(nn.Linear(6, 6), nn.Linear(6, 1))
    with observing(EvalGraphs) as observed:
        fit(model)
        validate(model, batches=3, no_grad=True)
    assert observed.codes == set()


def test_a_single_forward_is_not_an_evaluation_loop() -> None:
    model = nn.Sequential(nn.Linear(6, 6), nn.Linear(6, 1))
    with observing(EvalGraphs) as observed:
        validate(model, batches=1, no_grad=False)
    assert observed.codes == set()


def test_eval_mode_with_gradients_that_are_used_is_not_flagged() -> None:
    """Input gradients in eval mode (saliency, adversarial examples) use their graphs."""
    model = nn.Sequential(nn.Linear(6, 6), nn.Linear(6, 1))
    with observing(EvalGraphs) as observed:
        model.eval()
        for _ in range(3):
            x = torch.randn(4, 6, requires_grad=True)
            (grad,) = torch.autograd.grad(model(x).sum(), x)
        model.train()
    assert observed.codes == set()


def test_a_frozen_model_in_eval_mode_builds_no_graph() -> None:
    teacher = nn.Sequential(nn.Linear(6, 6), nn.Linear(6, 1)).requires_grad_(False)
    with observing(EvalGraphs) as observed:
        teacher.eval()
        for _ in range(3):
            teacher(torch.randn(4, 6))
    assert observed.codes == set()


def test_evaluation_graphs_are_flagged_even_if_training_goes_on_in_eval_mode() -> None:
    """validate() leaves the model in eval mode (TD131); its graphs are still never used."""
    model = nn.Sequential(nn.Linear(6, 6), nn.Dropout(0.1), nn.Linear(6, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    with observing(EvalGraphs) as observed:
        for epoch in range(2):
            for _ in range(2):
                optimizer.zero_grad()
                model(torch.randn(8, 6)).pow(2).mean().backward()
                optimizer.step()
            model.eval()
            for _ in range(3):
                model(torch.randn(4, 6)).sum().item()  # evaluation, never switched back
    assert observed.one("TD161").line == line_of(HERE, "# evaluation, never switched back")


def test_eval_mode_fine_tuning_uses_its_graphs() -> None:
    model = nn.Sequential(nn.Linear(6, 6), nn.Linear(6, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    with observing(EvalGraphs) as observed:
        model.eval()
        for _ in range(4):
            optimizer.zero_grad()
            model(torch.randn(8, 6)).pow(2).mean().backward()
            optimizer.step()
    assert observed.codes == set()
