"""The lab programs (examples/lab): each bug is found at its line, each fixed twin is silent.

Run in-process through `torchdoctor.watch()` (the same session and detectors as
`torchdoctor run`, without starting a process per program). Programs whose bug is for other
commands or for detectors not built yet are still run: their fixed twins must stay silent.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import linecache
import os
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
import torch

import torchdoctor
from tests.lab import LAB, PROGRAMS

#: program -> (rule, a fragment of the line the finding must point at)
EXPECTED = {
    "01_softmax_before_cross_entropy": ("TD101", "torch.softmax("),
    "02_missing_zero_grad": ("TD110", "loss.backward()"),
    "03_layers_in_plain_list": ("TD122", "self.blocks = ["),
    "05_float64_inputs_from_numpy": ("TD411", "self.head(self.body(x))"),
    "06_float_labels_cross_entropy": ("TD106", "loss_fn(model(x), y)"),
    "07_labels_out_of_range": ("TD105", "loss_fn(model(x), y)"),
    "08_mse_target_broadcast": ("TD104", "loss_fn(model(x), y)"),
    "09_optimizer_before_new_head": ("TD114", "torch.optim.SGD("),
    "11_graph_cut_in_forward": ("TD120", ".detach().numpy()"),
    "12_sigmoid_before_bce_with_logits": ("TD102", "torch.sigmoid("),
    "15_log_of_negative_input": ("TD145", "torch.log(x)"),
    "17_lambda_collate_fn_workers": ("TD142", "collate_fn=lambda"),
    "18_tensor_attribute_not_parameter": ("TD123", "self.temperature = "),
    "20_softmax_into_nll_loss": ("TD103", "F.softmax("),
    "23_everything_frozen": ("TD416", "loss.backward()"),
    "24_validation_in_train_mode": ("TD133", "correct = 0"),
    "25_accumulation_reset_every_batch": ("TD115", "optimizer.zero_grad()"),
    "26_lstm_without_batch_first": ("TD302", "self.lstm = nn.LSTM("),
    "27_scheduler_stepped_every_batch": ("TD428", "scheduler.step()"),
    "28_encoder_under_no_grad": ("TD124", "features = encoder(x)"),
    "29_compiled_softmax_before_cross_entropy": ("TD101", "torch.softmax("),
    "30_compiled_graph_cut_in_forward": ("TD120", ".detach().numpy()"),
    "31_sqrt_gradient_at_zero": ("TD145", "torch.sqrt("),
    "32_exp_overflow_in_manual_softmax": ("TD145", "torch.exp("),
    "33_division_by_zero_norm": ("TD145", "x.norm(dim=1"),
    "34_fully_masked_attention_row": ("TD145", "masked_fill("),
    "35_float16_overflow": ("TD145", "** 2).sum("),
    "36_learning_rate_explodes": ("TD490", "optimizer.step()"),
    "37_graph_break_item_in_forward": ("TD480", ".item()"),
    "38_recompiles_on_python_value": ("TD481", "weighted_cross_entropy(logits, labels, f\"warmup-"),  # the call that passes the new string
    "39_embedding_cache_keyed_per_batch": ("TD440", "embeddings[step] = model.body(x)"),
    "40_attention_maps_kept_on_module": ("TD440", "self.maps.append(weights)"),
    "41_debug_hook_keeps_outputs": ("TD440", "outputs.append(output)"),
    "42_context_carried_with_retain_graph": ("TD148", "loss.backward(retain_graph=True)"),
    "43_example_images_keep_batches": ("TD440", "gallery.append(images[0])"),
    "44_exceptions_kept_with_tracebacks": ("TD440", "skipped.append(error)"),
    "45_metrics_log_keeps_graphs": ("TD440", "self.values.append(values)"),
    "49_learning_rate_far_too_small": ("TD494", "torch.optim.SGD("),
    "51_cross_entropy_negated_as_log_likelihood": ("TD494", "torch.optim.SGD("),
    "52_adam_learning_rate_too_large": ("TD495", "torch.optim.Adam("),
    "53_training_loader_without_shuffle": ("TD451", "loader = DataLoader(FolderDataset()"),
    "54_pairwise_distance_sqrt_at_zero": ("TD145", "dist = diff.pow(2).sum(-1).sqrt()"),
    "55_corrupted_sample_spikes_loss": ("TD496", "loss.backward()"),
    "56_worker_retries_missing_file": ("TD497", "time.sleep(BACKOFF * 2**attempt)"),
    "57_relu_units_killed_by_learning_rate": ("TD484", "self.net = nn.Sequential("),
    "58_sigmoid_mlp_large_init": ("TD485", "self.net = nn.Sequential("),
    "59_deep_sigmoid_net_vanishing_gradients": ("TD486", "self.body = nn.Sequential("),
    "60_overfitting_tiny_dataset": ("TD488", "val_loss = sum(loss_fn(model(x), y)"),
    "61_class_imbalance_plain_loss": ("TD499", "loss = loss_fn(model(x), y)"),
}
#: environment a program's bug needs to show within a test (the buggy program and its twin alike)
ENV = {"56_worker_retries_missing_file": {"TORCHDOCTOR_STALL_TIMEOUT": "1"}}
#: programs whose bug shows over steps (memory that grows: censuses at steps 1-3, 8, 16, 32)
STEPS = {name: 40 for name in EXPECTED if name[:2] in ("39", "40", "41", "42", "43", "44", "45")}
pytestmark = pytest.mark.skipif(not PROGRAMS, reason="examples/lab is not there")


def load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"lab_{path.parent.name}_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def watched(path: Path) -> torchdoctor.Report:
    torch._dynamo.reset()  # each program as in a fresh process: nothing compiled by the one before
    module = load(path)
    # a bug that needs more steps to show says so (STEPS_TO_SHOW), or is listed in STEPS
    steps = max(6, getattr(module, "STEPS_TO_SHOW", 0), STEPS.get(path.stem, 0))
    arguments = {"epochs": 2} if "epochs" in module.train.__code__.co_varnames else {"steps": steps}
    torch.set_num_threads(1)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(Exception), _environment(ENV.get(path.stem, {})):
        with torchdoctor.watch() as watch:
            module.train(**arguments)
    return watch.report


@contextlib.contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@pytest.mark.parametrize("program", PROGRAMS)
def test_bug_is_found_at_its_line(program: str) -> None:
    report = watched(LAB / f"{program}.py")
    if program not in EXPECTED:
        return  # a bug for another command or for detectors still to come: it must only run
    code, fragment = EXPECTED[program]
    found = [f for f in report.findings if f.rule == code]
    assert found, f"{program}: expected {code}, got {[f.rule for f in report.findings]}"
    line = linecache.getline(str(LAB / f"{program}.py"), found[0].line or 0)
    assert fragment in line, f"{program}: {code} points at {line.strip()!r}"
    if program in STEPS:  # the memory it holds is measured, whichever rule reports it
        evidence = found[0].evidence or {}
        assert evidence.get("memory", evidence).get("bytes_per_step", 0) > 0, evidence


@pytest.mark.parametrize("program", PROGRAMS)
def test_fixed_twin_is_silent(program: str) -> None:
    report = watched(LAB / "fixed" / f"{program}.py")
    found = [f for f in report.findings if f.severity.value != "info"]  # advice (compile cost) is not a finding on the program
    assert found == [], [f"{f.rule} {f.location} {f.message}" for f in found]
