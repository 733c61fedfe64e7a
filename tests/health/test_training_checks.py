"""Both sides of the checks that train a copy: optimizer coverage, the step, the loss,
batch independence, overfitting, eval determinism, NaN/Inf and custom Functions."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.health.conftest import by_rule, codes, status

HEADER = "import torch\nimport torch.nn.functional as F\nfrom torch import nn\n"
DATA = "(torch.randn(16, 8), torch.arange(16) % 3)"


# --- optimizer coverage and the step ------------------------------------------------------

def test_optimizer_over_part_of_the_model_is_flagged_at_its_line(check_source) -> None:  # type: ignore[no-untyped-def]
    report = check_source(HEADER + f"""
def make():
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 3))
    optimizer = torch.optim.SGD(model[2].parameters(), lr=0.1)
    return {{"model": model, "data": {DATA}, "loss_fn": nn.CrossEntropyLoss(), "optimizer": optimizer}}
""")
    found = by_rule(report, "TD114")
    assert found and found[0].line == 7 and "0.weight" in found[0].message
    assert "from `model.parameters()`" in found[0].hint  # one group: build it over the whole model


def test_a_parameter_left_out_of_deliberate_param_groups_is_named_with_its_group(check_source) -> None:  # type: ignore[no-untyped-def]
    """Param groups built on purpose: the hint says what to add to which group, not to rebuild
    the optimizer from `model.parameters()` (which would drop the groups' options)."""
    report = check_source(HEADER + f"""
def make():
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 3))
    optimizer = torch.optim.SGD([{{"params": model[0].parameters()}}, {{"params": [model[2].weight], "lr": 0.01}}], lr=0.1)
    return {{"model": model, "data": {DATA}, "loss_fn": nn.CrossEntropyLoss(), "optimizer": optimizer}}
""")
    (found,) = by_rule(report, "TD114")
    assert found.line == 7 and "1 trainable parameter(s) are in no optimizer param group and will never be updated: 2.bias" in found.message
    assert re.fullmatch(r"Add `2\.bias` to one of the optimizer's 2 param groups \(param group 1 holds `2\.weight` of the same module\) "
                        r"where it is built \(at .*snippet_\d+\.py:7\), or give them their own group .*", found.hint), found.hint
    assert "model.parameters()" not in found.hint


def test_every_parameter_in_some_param_group_is_fine(check_source) -> None:  # type: ignore[no-untyped-def]
    report = check_source(HEADER + f"""
def make():
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 3))
    optimizer = torch.optim.SGD([{{"params": model[0].parameters()}}, {{"params": model[2].parameters(), "lr": 0.01}}], lr=0.1)
    return {{"model": model, "data": {DATA}, "loss_fn": nn.CrossEntropyLoss(), "optimizer": optimizer}}
""", skip=("overfit",))
    assert "TD114" not in codes(report)
    assert status(report, "optimizer") == "passed"


def test_frozen_parameters_in_the_optimizer_without_gradients_are_fine(check_source) -> None:  # type: ignore[no-untyped-def]
    report = check_source(HEADER + f"""
def make():
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 3))
    model[0].requires_grad_(False)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.5)
    return {{"model": model, "data": {DATA}, "loss_fn": nn.CrossEntropyLoss(), "optimizer": optimizer}}
""")
    assert not {"TD114", "TD116", "TD307"} & codes(report)
    assert status(report, "step") == "passed"


def test_a_group_with_lr_zero_is_a_deliberate_freeze(check_source) -> None:  # type: ignore[no-untyped-def]
    report = check_source(HEADER + f"""
def make():
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 3))
    optimizer = torch.optim.SGD([{{"params": model[0].parameters(), "lr": 0.0}}, {{"params": model[2].parameters()}}], lr=0.1)
    return {{"model": model, "data": {DATA}, "loss_fn": nn.CrossEntropyLoss(), "optimizer": optimizer}}
""")
    assert "TD307" not in codes(report)


def test_batchnorm_kept_in_eval_by_the_model_does_not_drift(check_source) -> None:  # type: ignore[no-untyped-def]
    # lab 10's fix is covered by the lab tests; here: a frozen BN without affine parameters
    report = check_source(HEADER + f"""
def make():
    model = nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8, affine=False), nn.Linear(8, 3))
    return {{"model": model, "data": {DATA}, "loss_fn": nn.CrossEntropyLoss()}}
""")
    assert "TD132" not in codes(report)


# --- loss ---------------------------------------------------------------------------------

def test_the_loss_check_names_the_users_loss_where_it_was_made_and_what_it_got(check_source) -> None:  # type: ignore[no-untyped-def]
    """Not "CrossEntropyLoss calls CrossEntropyLoss": the user's object, its line, and the values."""
    report = check_source(HEADER + f"""
def make():
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 3))
    criterion = nn.CrossEntropyLoss()
    return {{"model": model, "data": {DATA}, "loss_fn": criterion}}
""", skip=("overfit",))
    detail = next(c.detail for c in report.checks if c.name == "loss")
    assert re.fullmatch(r"CrossEntropyLoss \(.*snippet_\d+\.py:7\) gets input \(16, 3\) float32 and targets \(16\) int64 in 0\.\.2", detail), detail
    report = check_source(HEADER + f"""
def my_loss(output, target):
    return F.cross_entropy(output, target) + 0.0 * output.pow(2).mean()

def make():
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 3))
    return {{"model": model, "data": {DATA}, "loss_fn": my_loss}}
""", skip=("overfit",))
    detail = next(c.detail for c in report.checks if c.name == "loss")
    assert re.fullmatch(r"my_loss \(.*snippet_\d+\.py:5\) calls CrossEntropyLoss on input \(16, 3\) float32 and targets \(16\) int64 in 0\.\.2", detail), detail


def test_log_softmax_into_nll_and_soft_targets_are_fine(check_source) -> None:  # type: ignore[no-untyped-def]
    report = check_source(HEADER + """
def soft_and_hard(output, target):
    probs = F.one_hot(target, 3).float() * 0.9 + 0.1 / 3
    return F.nll_loss(F.log_softmax(output, dim=1), target) + F.cross_entropy(output, probs)

def make():
    x, y = torch.randn(16, 8), torch.arange(16) % 3
    return {"model": nn.Linear(8, 3), "data": (x, y), "loss_fn": soft_and_hard}
""")
    assert not {"TD101", "TD103", "TD105", "TD106", "TD303"} & codes(report)


def test_softmax_seen_through_a_reshape_in_a_custom_loss(check_source) -> None:  # type: ignore[no-untyped-def]
    report = check_source(HEADER + """
def sequence_loss(output, target):
    probs = output.softmax(dim=-1)
    return F.cross_entropy(probs.reshape(-1, 5), target.reshape(-1))

def make():
    x, y = torch.randn(4, 6, 8), torch.arange(24).reshape(4, 6) % 5
    return {"model": nn.Linear(8, 5), "data": (x, y), "loss_fn": sequence_loss}
""")
    found = by_rule(report, "TD101")
    assert found and found[0].line == 6 and ".softmax()" in found[0].message


def test_a_sigmoid_head_into_cross_entropy_and_into_bce(check_source) -> None:  # type: ignore[no-untyped-def]
    source = HEADER + """
def make():
    x, y = torch.randn(16, 8), torch.arange(16) % 3
    return {"model": nn.Sequential(nn.Linear(8, 3), nn.Sigmoid()), "data": (x, TARGET), "loss_fn": LOSS}
"""
    flagged = check_source(source.replace("TARGET", "y").replace("LOSS", "nn.CrossEntropyLoss()"))
    found = by_rule(flagged, "TD119")
    assert found and "Sigmoid" in found[0].message
    fine = check_source(source.replace("TARGET", "F.one_hot(y, 3).float()").replace("LOSS", "nn.BCELoss()"))
    assert not {"TD119", "TD102"} & codes(fine)


def test_padding_labels_need_ignore_index(check_source) -> None:  # type: ignore[no-untyped-def]
    source = HEADER + """
def make():
    y = torch.arange(16) % 3
    y[::4] = -1  # padding
    return {"model": nn.Linear(8, 3), "data": (torch.randn(16, 8), y), "loss_fn": nn.CrossEntropyLoss(IGNORE)}
"""
    flagged = check_source(source.replace("IGNORE", ""))
    assert "TD105" in codes(flagged) and "-1" in by_rule(flagged, "TD105")[0].message
    assert "TD301" not in codes(flagged)
    fine = check_source(source.replace("IGNORE", "ignore_index=-1"))
    assert "TD105" not in codes(fine)


def test_matching_regression_shapes_do_not_broadcast(check_source) -> None:  # type: ignore[no-untyped-def]
    report = check_source(HEADER + """
def make():
    return {"model": nn.Linear(8, 1), "data": (torch.randn(16, 8), torch.randn(16, 1)), "loss_fn": nn.MSELoss()}
""")
    assert "TD104" not in codes(report)


def test_a_loss_that_cannot_take_the_output_is_explained(check_source) -> None:  # type: ignore[no-untyped-def]
    report = check_source(HEADER + """
def make():
    return {"model": nn.Linear(8, 1), "data": (torch.randn(16, 8), (torch.arange(16) % 2).float()), "loss_fn": nn.BCEWithLogitsLoss()}
""")
    found = by_rule(report, "TD301")
    assert found and "(16, 1)" in found[0].message and "(16)" in found[0].message and found[0].line == 6
    assert status(report, "grad-flow") == "passed"  # checked with a stand-in objective


def test_a_model_output_object_given_to_the_loss_points_at_its_logits(check_source) -> None:  # type: ignore[no-untyped-def]
    """A Hugging Face-style model returns an output object: the loss needs its `.logits`."""
    report = check_source(HEADER + """
from collections import OrderedDict

class SequenceClassifierOutput(OrderedDict):
    def __getattr__(self, name):
        return self[name]

class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 3)

    def forward(self, x):
        return SequenceClassifierOutput(logits=self.fc(x))

def make():
    return {"model": Classifier(), "data": (torch.randn(16, 8), torch.arange(16) % 3), "loss_fn": nn.CrossEntropyLoss()}
""")
    found = by_rule(report, "TD301")
    assert found and "`loss_fn(model(x).logits, y)`" in found[0].hint and "SequenceClassifierOutput" in found[0].hint
    plain = check_source(HEADER + """
def make():
    return {"model": nn.Linear(8, 1), "data": (torch.randn(16, 8), (torch.arange(16) % 2).float()), "loss_fn": nn.BCEWithLogitsLoss()}
""")
    assert ".logits" not in by_rule(plain, "TD301")[0].hint


BCE = HEADER + """
def make():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 1)LAST)
    return {"model": model, "data": (torch.randn(16, 8), (torch.arange(16) % 2).float()[:, None]), "loss_fn": nn.BCELoss()}
"""


def test_raw_scores_into_bce_loss_are_named_at_the_loss(check_source) -> None:  # type: ignore[no-untyped-def]
    (finding,) = by_rule(check_source(BCE.replace("LAST", "")), "TD108")
    assert "values from " in finding.message and finding.line == 8  # where the BCELoss is built


def test_probabilities_into_bce_loss_pass(check_source) -> None:  # type: ignore[no-untyped-def]
    report = check_source(BCE.replace("LAST", ", nn.Sigmoid()"))
    assert not {"TD108", "TD301"} & codes(report) and status(report, "forward") == "passed"


def test_a_pretrained_low_initial_loss_is_fine(check_source) -> None:  # type: ignore[no-untyped-def]
    report = check_source(HEADER + """
def make():
    model = nn.Linear(8, 3)
    x = torch.randn(16, 8)
    y = (x @ torch.randn(8, 3)).argmax(1)
    with torch.no_grad():  # "pretrained": confident and right
        for _ in range(200):
            model.weight += 0.05 * torch.autograd.functional.jacobian(lambda w: -F.cross_entropy(x @ w.T, y), model.weight)
    return {"model": model, "data": (x, y), "loss_fn": nn.CrossEntropyLoss()}
""")
    assert "TD303" not in codes(report)


# --- batch independence -------------------------------------------------------------------

def test_batchnorm_and_embeddings_are_batch_independent_in_eval(check_source) -> None:  # type: ignore[no-untyped-def]
    report = check_source(HEADER + """
class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(20, 8)
        self.norm = nn.BatchNorm1d(8)
        self.head = nn.Linear(8, 3)

    def forward(self, tokens):
        return self.head(self.norm(self.embed(tokens).mean(dim=1)))

def make():
    return {"model": Tagger(), "data": (torch.randint(0, 20, (8, 5)), torch.arange(8) % 3), "loss_fn": nn.CrossEntropyLoss()}
""")
    assert "TD302" not in codes(report)
    assert status(report, "batch-independence") == "passed"


def test_token_models_that_mix_the_batch_are_caught(check_source) -> None:  # type: ignore[no-untyped-def]
    report = check_source(HEADER + """
class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(20, 8)
        self.head = nn.Linear(8, 3)

    def forward(self, tokens):
        h = self.embed(tokens)
        return self.head(h - h.mean(dim=0))  # "centering" over the batch

def make():
    return {"model": Tagger(), "data": (torch.randint(0, 20, (8, 5)), torch.arange(8) % 3), "loss_fn": nn.CrossEntropyLoss()}
""")
    assert "TD302" in codes(report)


LSTM_CLASSIFIER = HEADER + """
class Classifier(nn.Module):
    def __init__(self, batch_first):
        super().__init__()
        self.lstm = nn.LSTM(4, 8, batch_first=batch_first)
        self.head = nn.Linear(8, 2)

    def forward(self, x):  # x: (batch, time, features)
        out, _ = self.lstm(x)
        return self.head(out[:, -1])

def make():
    return {"model": Classifier(BATCH_FIRST), "data": (torch.randn(8, 6, 4), torch.arange(8) % 2),
            "loss_fn": nn.CrossEntropyLoss()}
"""


def test_a_recurrent_layer_reading_the_batch_as_time_is_caught(check_source) -> None:  # type: ignore[no-untyped-def]
    """Only later samples depend on earlier ones: sample 0 alone looks independent."""
    (finding,) = by_rule(check_source(LSTM_CLASSIFIER.replace("BATCH_FIRST", "False")), "TD302")
    assert "the output for sample 3 depends on" in finding.message


def test_a_batch_first_recurrent_layer_is_batch_independent(check_source) -> None:  # type: ignore[no-untyped-def]
    report = check_source(LSTM_CLASSIFIER.replace("BATCH_FIRST", "True"))
    assert status(report, "batch-independence") == "passed"


# --- overfitting --------------------------------------------------------------------------

def test_a_healthy_model_overfits(check_source) -> None:  # type: ignore[no-untyped-def]
    report = check_source(HEADER + f"""
def make():
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 3))
    return {{"model": model, "data": {DATA}, "loss_fn": nn.CrossEntropyLoss(), "optimizer": torch.optim.SGD(model.parameters(), lr=0.1)}}
""")
    assert status(report, "overfit") == "passed"


def test_overfitting_needs_a_loss(check_source) -> None:  # type: ignore[no-untyped-def]
    report = check_source(HEADER + """
def make():
    return {"model": nn.Linear(8, 3), "data": (torch.randn(16, 8),)}
""")
    assert status(report, "overfit") == "skipped" and status(report, "grad-flow") == "passed"


# --- eval determinism ---------------------------------------------------------------------

def test_module_dropout_and_monte_carlo_dropout_are_fine(check_source) -> None:  # type: ignore[no-untyped-def]
    report = check_source(HEADER + """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 3)
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        x = F.dropout(x, p=0.1, training=self.training)
        return self.fc(self.drop(x))

class Bayesian(Net):
    def forward(self, x):
        return self.fc(F.dropout(x, p=0.1, training=True))  # Monte Carlo dropout, on purpose

def make():
    return {"model": MODEL(), "data": (torch.randn(16, 8), torch.arange(16) % 3), "loss_fn": nn.CrossEntropyLoss()}
""".replace("MODEL", "Net"))
    assert not {"TD130", "TD305"} & codes(report)


def test_monte_carlo_dropout_written_with_training_true_is_deliberate(check_source) -> None:  # type: ignore[no-untyped-def]
    report = check_source(HEADER + """
class Bayesian(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 3)

    def forward(self, x):
        return self.fc(F.dropout(x, p=0.1, training=True))

def make():
    return {"model": Bayesian(), "data": (torch.randn(16, 8), torch.arange(16) % 3), "loss_fn": nn.CrossEntropyLoss()}
""")
    assert "TD130" not in codes(report)


# --- NaN / Inf ----------------------------------------------------------------------------

def test_nan_in_the_data_points_at_the_data(check_source) -> None:  # type: ignore[no-untyped-def]
    report = check_source(HEADER + """
def make():
    x = torch.randn(16, 8)
    x[3, 2] = float("nan")
    return {"model": nn.Linear(8, 3), "data": (x, torch.arange(16) % 3), "loss_fn": nn.CrossEntropyLoss()}
""")
    found = by_rule(report, "TD145")
    assert len(found) == 1 and "input batch" in found[0].message and found[0].line == 6  # where x is made


def test_nan_made_by_backward_is_traced_to_its_forward_line(check_source) -> None:  # type: ignore[no-untyped-def]
    report = check_source(HEADER + """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 3)

    def forward(self, x):
        h = self.fc(x)
        return h + torch.sqrt(h * 0)  # sqrt of 0: finite forward, NaN gradient

def make():
    return {"model": Net(), "data": (torch.randn(16, 8), torch.arange(16) % 3), "loss_fn": nn.CrossEntropyLoss()}
""")
    found = by_rule(report, "TD145")
    # sqrt's backward gives inf, and the multiplication by 0 behind it makes the NaN
    assert found and "gradient" in found[0].message and "MulBackward0" in found[0].message and found[0].line == 12


# --- custom autograd Functions ------------------------------------------------------------

def test_straight_through_estimators_are_a_warning_not_an_error(check_source) -> None:  # type: ignore[no-untyped-def]
    report = check_source(HEADER + """
class RoundSTE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return torch.round(x)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 3)

    def forward(self, x):
        return self.fc(RoundSTE.apply(x * 4) / 4)

def make():
    return {"model": Net(), "data": (torch.randn(16, 8), torch.arange(16) % 3), "loss_fn": nn.CrossEntropyLoss()}
""")
    found = by_rule(report, "TD311")
    assert found and found[0].severity.value == "warning" and found[0].line == 11  # def backward


def test_a_model_that_returns_its_own_loss_is_trained_with_it(check_source) -> None:  # type: ignore[no-untyped-def]
    report = check_source(HEADER + """
class WithLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 3)

    def forward(self, inputs, labels):
        logits = self.fc(inputs)
        return {"logits": logits, "loss": F.cross_entropy(logits, labels)}

def make():
    x, y = torch.randn(16, 8), torch.arange(16) % 3
    return {"model": WithLoss(), "data": ({"inputs": x, "labels": y},)}
""")
    assert status(report, "overfit") == "passed"
    assert "output.loss" in next(c.detail for c in report.checks if c.name == "forward")


def test_a_loss_still_falling_slowly_is_inconclusive_not_a_failure(check_source) -> None:  # type: ignore[no-untyped-def]
    report = check_source(HEADER + f"""
def make():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 3))
    return {{"model": model, "data": {DATA}, "loss_fn": nn.CrossEntropyLoss(),
            "optimizer": torch.optim.Adam(model.parameters(), lr=1e-3)}}
""", overfit_steps=40)
    assert "TD304" not in codes(report)
    assert "inconclusive" in next(c.detail for c in report.checks if c.name == "overfit")


def test_the_overfit_budget_is_in_steps_and_operations_not_seconds(check_source, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A model whose step costs more than the budget's share gets fewer steps, as many on any
    machine: the count comes from counted operations, and the detail says why and how long it took."""
    from torchdoctor.health.checks import overfit

    source = HEADER + f"""
def make():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 3))
    return {{"model": model, "data": {DATA}, "loss_fn": nn.CrossEntropyLoss(),
            "optimizer": torch.optim.Adam(model.parameters(), lr=1e-3)}}
"""
    flops = 6 * (8 * 32 + 32 + 32 * 3 + 3) * 8  # at least 6 per parameter and sample: more than the counted matmuls
    monkeypatch.setattr(overfit, "FLOP_BUDGET", 40 * flops + 1)
    details = [next(c.detail for c in check_source(source).checks if c.name == "overfit") for _ in range(2)]
    (detail,) = {re.sub(r" in [0-9.]+ s;", " in ... s;", d) for d in details}  # the same twice, but for the time it took
    assert detail.startswith("inconclusive: with your Adam(lr=0.001) the loss is still falling: ") and "(40 steps) in " in detail
    assert detail.endswith(f"40 steps of {flops / 1000:.3g} kFLOP each is as many as the check's {(40 * flops + 1) / 1000:.3g} kFLOP allow")


def test_the_overfit_time_cap_is_a_safety_net_said_aloud(check_source) -> None:  # type: ignore[no-untyped-def]
    """When the cap fires the verdict would depend on the machine's speed: no TD304, and a notice."""
    lab = Path(__file__).resolve().parents[2] / "examples" / "lab" / "01_softmax_before_cross_entropy.py"
    report = check_source(lab.read_text(encoding="utf-8"), overfit_max_seconds=0.0)
    assert "TD304" not in codes(report) and status(report, "overfit") == "passed"
    detail = next(c.detail for c in report.checks if c.name == "overfit")
    assert detail.startswith("inconclusive: stopped by the 0 s time cap after 1 of 300 steps")
    (notice,) = [n for n in report.notices if "time cap" in n]
    assert notice.startswith("the overfit check stopped at its time cap of 0 s after 1 of its 300 steps") and "inconclusive" in notice
    assert "TD304" in codes(check_source(lab.read_text(encoding="utf-8")))  # without the cap: the full budget, the finding


def test_an_unbatched_loader_skips_the_batch_checks(check_source) -> None:  # type: ignore[no-untyped-def]
    report = check_source(HEADER + """
from torch.utils.data import DataLoader, TensorDataset

def make():
    loader = DataLoader(TensorDataset(torch.randn(16, 8), torch.arange(16) % 3), batch_size=None)
    return {"model": nn.Linear(8, 3), "data": loader, "loss_fn": nn.CrossEntropyLoss()}
""")
    assert not report.notices and status(report, "batch-independence") == "skipped"


def test_nan_made_by_the_optimizer_step_points_at_the_optimizer(check_source) -> None:  # type: ignore[no-untyped-def]
    report = check_source(HEADER + f"""
def make():
    model = nn.Linear(8, 3)
    optimizer = torch.optim.SGD(model.parameters(), lr=float("inf"))
    return {{"model": model, "data": {DATA}, "loss_fn": nn.CrossEntropyLoss(), "optimizer": optimizer}}
""")
    found = by_rule(report, "TD145")
    assert found and "after one step" in found[0].message and "SGD.step()" in found[0].message and found[0].line == 7


@pytest.mark.parametrize("call", [
    "F.dropout(x, p=0.1,  # only while training\n                      inplace=False)",
    "F.dropout(x, p=0.1, inplace=bool('training' == ''))",
])
def test_a_comment_or_string_that_says_training_is_not_the_training_argument(check_source, call) -> None:  # type: ignore[no-untyped-def]
    """`training=` is read off the call's code: a comment or a string inside the call that
    mentions training passes nothing, and the dropout still drops in eval mode."""
    report = check_source(HEADER + """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 3)

    def forward(self, x):
        x = CALL
        return self.fc(x)

def make():
    return {"model": Net(), "data": (torch.randn(16, 8), torch.arange(16) % 3), "loss_fn": nn.CrossEntropyLoss()}
""".replace("CALL", call))
    assert "TD130" in codes(report)


def test_a_training_flag_passed_by_position_is_the_training_argument(check_source) -> None:  # type: ignore[no-untyped-def]
    report = check_source(HEADER + """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 3)

    def forward(self, x):
        x = F.dropout(x, 0.1,  # the flag below
                      self.training)
        return self.fc(x)

def make():
    return {"model": Net(), "data": (torch.randn(16, 8), torch.arange(16) % 3), "loss_fn": nn.CrossEntropyLoss()}
""")
    assert "TD130" not in codes(report)
