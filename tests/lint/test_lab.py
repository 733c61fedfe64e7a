"""The lab programs (examples/lab) under lint: each bug with a static signal is found at its line,
the others get no finding at all, and no fixed twin gets a finding."""

from __future__ import annotations

import linecache
import re

import pytest

from tests.lab import LAB, PROGRAMS, readme_column
from tests.lint.conftest import lint_file

#: program -> (rule, a fragment of the line the finding must point at); programs not listed have
#: a data- or value-dependent bug that only `check` and `run` can see: lint must stay silent there.
EXPECTED = {
    "01_softmax_before_cross_entropy": ("TD101", "torch.softmax("),
    "02_missing_zero_grad": ("TD110", "loss.backward()"),
    "03_layers_in_plain_list": ("TD122", "self.blocks = ["),
    "04_functional_dropout_in_eval": ("TD130", "F.dropout("),
    "09_optimizer_before_new_head": ("TD114", "model.fc = "),
    "11_graph_cut_in_forward": ("TD121", ".detach().numpy()"),
    "12_sigmoid_before_bce_with_logits": ("TD102", "torch.sigmoid("),
    "14_rng_object_in_dataset_workers": ("TD140", "self.rng = "),
    "16_eval_never_switched_back": ("TD131", "for x, y in loader:"),
    "17_lambda_collate_fn_workers": ("TD142", "collate_fn=lambda"),
    "18_tensor_attribute_not_parameter": ("TD123", "self.temperature = "),
    "20_softmax_into_nll_loss": ("TD103", "F.softmax("),
    "24_validation_in_train_mode": ("TD133", "correct = 0"),
    "25_accumulation_reset_every_batch": ("TD115", "optimizer.zero_grad()"),
    "28_encoder_under_no_grad": ("TD124", "features = encoder(x)"),
    "29_compiled_softmax_before_cross_entropy": ("TD101", "torch.softmax("),
    "30_compiled_graph_cut_in_forward": ("TD121", ".detach().numpy()"),
    "42_context_carried_with_retain_graph": ("TD148", "loss.backward(retain_graph=True)"),
    "51_cross_entropy_negated_as_log_likelihood": ("TD176", "loss = -F.cross_entropy("),
    "53_training_loader_without_shuffle": ("TD143", "shuffle=False"),
}
pytestmark = pytest.mark.skipif(not PROGRAMS, reason="examples/lab is not there")


@pytest.mark.parametrize("program", PROGRAMS)
def test_bug_is_found_at_its_line(program: str) -> None:
    path = LAB / f"{program}.py"
    found = lint_file(path)
    if program not in EXPECTED:
        assert found == [], [f"{f.rule} {f.location} {f.message}" for f in found]
        return
    code, fragment = EXPECTED[program]
    assert [f.rule for f in found] == [code]
    line = linecache.getline(str(path), found[0].line or 0)
    assert fragment in line, f"{program}: {code} points at {line.strip()!r}"


@pytest.mark.parametrize("program", PROGRAMS)
def test_fixed_twin_is_silent(program: str) -> None:
    found = lint_file(LAB / "fixed" / f"{program}.py")
    assert found == [], [f"{f.rule} {f.location} {f.message}" for f in found]


def test_lab_readme_says_what_lint_finds() -> None:
    column = readme_column(4)  # "lint TD101 (line 22) · run TD101 (line 22)"
    for program in PROGRAMS:
        lint_part = column[program[:2]].split("·")[0]
        assert re.findall(r"TD\d{3}", lint_part) == ([EXPECTED[program][0]] if program in EXPECTED else []), program
