"""Crash explanations: real exceptions from small snippets, explained at the user's line.

The snippets run in-process under `torchdoctor.watch()` (the same explainers as
`torchdoctor run`), so the failing frames are live and what the session saw (module names,
DataLoaders) is available. Texts only seen on a GPU are tested on their message.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import sys
from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import torchdoctor
from tests import children
from torchdoctor.core.finding import Finding
from torchdoctor.observe.crash.data import worker_killed
from torchdoctor.observe.crash.explain import explain
from torchdoctor.observe.crash.loss import arguments_swapped, binary_target_dtype
from torchdoctor.observe.crash.model import Crash


def explained(action: Callable[[], object]) -> Finding:
    """Run `action` under watch(); it must raise; return the one finding that explains it."""
    with pytest.raises(BaseException) as raised:  # noqa: PT011 - any exception the snippet raises
        with torchdoctor.watch() as watch:
            action()
    assert raised.value is not None
    findings = watch.report.findings
    assert len(findings) == 1, findings
    assert findings[0].severity.value == "error"
    return findings[0]


def line_of(text: str, function: Callable[..., object]) -> int:
    import inspect

    lines, start = inspect.getsourcelines(function)
    return start + next(i for i, line in enumerate(lines) if text in line)


class Net(nn.Module):
    def __init__(self, features: int = 512) -> None:
        super().__init__()
        self.fc = nn.Linear(256, 10)
        self.features = features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x)


def test_device_mismatch_names_both_sides() -> None:
    model = nn.Linear(8, 2).to("meta")  # the only second device of a CPU-only machine

    def step() -> None:
        x = torch.randn(4, 8)
        model(x)

    finding = explained(step)
    assert finding.rule == "TD410" and finding.line == line_of("model(x)", step)
    assert "`x` is on cpu" in finding.message and "meta" in finding.message


def test_dtype_mismatch_points_at_float64_data() -> None:
    def step() -> None:
        features = torch.rand(16, 8, dtype=torch.float64)
        nn.Linear(8, 1)(features)

    finding = explained(step)
    assert finding.rule == "TD411"
    assert "`features` is float64" in finding.message and "torch.float32" in finding.hint
    # at the line that made it float64, with the crash's own line kept in the message
    assert finding.line == line_of("features = torch.rand", step)
    assert f"crashes at tests/run/test_crash.py:{line_of('nn.Linear(8, 1)(features)', step)}" in finding.message


def test_token_ids_converted_to_floats_point_at_the_conversion() -> None:
    embed = nn.Embedding(100, 8)

    def step() -> None:
        tokens = torch.randint(0, 100, (4, 5))
        ids = tokens.double()
        embed(ids)

    finding = explained(step)
    assert finding.rule == "TD411" and finding.line == line_of("ids = tokens.double()", step)
    assert "`ids` is float64" in finding.message and "int64" in finding.message and ".long()" in finding.hint


@pytest.mark.parametrize("update", ["multiply", "method", "zero"])
def test_gradient_read_before_any_backward(update: str) -> None:
    w = torch.randn(3, requires_grad=True)
    frozen = torch.randn(3)

    def step() -> None:
        loss = ((torch.randn(8, 3) @ w) ** 2).mean()
        with torch.no_grad():
            if update == "multiply":
                w.sub_(0.1 * w.grad)
            elif update == "method":
                w.data.add_(w.grad, alpha=-0.1)
            else:
                frozen.grad.zero_()
        return loss

    finding = explained(step)
    assert finding.rule == "TD433"
    name = "frozen" if update == "zero" else "w"
    assert f"`{name}.grad` is None" in finding.message
    assert ("does not require grad" in finding.message) == (update == "zero")


def test_a_hand_written_update_that_rebinds_the_weights_is_named() -> None:
    def train() -> None:
        w = torch.randn(3, requires_grad=True)
        for _ in range(2):
            ((torch.randn(8, 3) @ w) ** 2).mean().backward()
            w = w - 0.1 * w.grad
            w.grad.zero_()

    finding = explained(train)
    assert finding.rule == "TD433" and finding.line == line_of("w.grad.zero_()", train)
    assert "line " + str(line_of("w = w - 0.1 * w.grad", train)) + " rebound it to `w - 0.1 * w.grad`" in finding.message
    assert "`with torch.no_grad(): w -= lr * w.grad`" in finding.hint


def test_weights_made_by_an_op_on_a_leaf_are_named() -> None:
    def train() -> None:
        w = torch.randn(3, requires_grad=True) * 0.01
        ((torch.randn(8, 3) @ w) ** 2).mean().backward()
        w.data -= 0.1 * w.grad

    with pytest.warns(UserWarning, match="not a leaf"):
        finding = explained(train)
    assert finding.rule == "TD433" and "`w` is made by `torch.randn(3, requires_grad=True) * 0.01`" in finding.message
    assert "requires_grad_()" in finding.hint


def test_none_that_is_no_gradient_is_not_explained_as_one() -> None:
    w = torch.randn(3, requires_grad=True)
    ((torch.randn(8, 3) @ w) ** 2).mean().backward()
    scale = None

    with pytest.raises(TypeError), torchdoctor.watch() as watch:
        w.data.add_(w.grad * scale)  # type: ignore[operator]
    assert [f.rule for f in watch.report.findings] == ["TD001"]


def test_in_place_change_of_a_saved_output_names_the_forward_op() -> None:
    def step() -> None:
        h = torch.sigmoid(nn.Linear(4, 4)(torch.randn(2, 4)))
        h += 1
        h.sum().backward()

    finding = explained(step)
    assert finding.rule == "TD412" and "the output of sigmoid" in finding.message
    assert finding.line == line_of("backward()", step)


def test_leaf_changed_in_place() -> None:
    finding = explained(lambda: nn.Linear(3, 3).weight.mul_(2))
    assert finding.rule == "TD413" and "torch.no_grad()" in finding.hint


def test_view_of_a_permuted_tensor() -> None:
    def step() -> None:
        images = torch.randn(2, 3, 4, 4).permute(0, 2, 3, 1)
        images.view(2, -1)

    finding = explained(step)
    assert finding.rule == "TD414" and "`images`" in finding.message and "permute" in finding.message


def test_freed_graph_across_steps_and_within_a_step() -> None:
    cell = nn.RNNCell(2, 3)
    optimizer = torch.optim.SGD(cell.parameters(), lr=0.1)

    def carried() -> None:
        h = torch.zeros(1, 3)
        for _ in range(3):
            h = cell(torch.randn(1, 2), h)
            optimizer.zero_grad()
            h.sum().backward()
            optimizer.step()

    assert "earlier iteration" in explained(carried).message

    def twice() -> None:
        y = (nn.Linear(2, 1)(torch.randn(3, 2))).exp().sum()
        y.backward()
        y.backward()

    finding = explained(twice)
    assert finding.rule == "TD415" and "twice" in finding.message

    trunk, head_a, head_b = nn.Linear(2, 4), nn.Linear(4, 1), nn.Linear(4, 1)

    def two_losses_sharing_a_trunk() -> None:
        features = trunk(torch.randn(3, 2)).tanh()
        loss_a, loss_b = head_a(features).sum(), head_b(features).sum()
        loss_a.backward()
        loss_b.backward()

    assert "twice" in explained(two_losses_sharing_a_trunk).message


def test_freed_graph_of_a_hidden_state_carried_without_an_optimizer() -> None:
    """Weights updated by hand (no torch optimizer): the state carried from the previous
    iteration is still the cause, not "backward() twice in one step"."""
    rnn, head = nn.LSTM(4, 8), nn.Linear(8, 3)
    params = [*rnn.parameters(), *head.parameters()]

    def epoch() -> None:
        hidden = (torch.zeros(1, 2, 8), torch.zeros(1, 2, 8))
        for _ in range(3):
            for p in params:
                p.grad = None
            out, hidden = rnn(torch.randn(5, 2, 4), hidden)
            F.cross_entropy(head(out).view(-1, 3), torch.randint(0, 3, (10,))).backward()
            for p in params:
                p.data.add_(p.grad, alpha=-0.1)

    finding = explained(epoch)
    assert "earlier iteration" in finding.message and "h.detach()" in finding.hint


class Generator(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.net(z)


def test_freed_graph_of_a_fake_batch_not_detached_for_the_discriminator() -> None:
    def gan_step() -> None:
        generator, discriminator = Generator(), nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 1))
        opt_g, opt_d = torch.optim.Adam(generator.parameters()), torch.optim.Adam(discriminator.parameters())
        bce = nn.BCEWithLogitsLoss()
        fake = generator(torch.randn(16, 4))
        opt_d.zero_grad()
        d_loss = bce(discriminator(torch.randn(16, 2)), torch.ones(16, 1)) + bce(discriminator(fake), torch.zeros(16, 1))
        d_loss.backward()
        opt_d.step()
        opt_g.zero_grad()
        bce(discriminator(fake), torch.ones(16, 1)).backward()
        opt_g.step()

    finding = explained(gan_step)
    assert "output of `Generator`" in finding.message and "fake.detach()" in finding.hint


@pytest.mark.parametrize(
    "case, reason",
    [("no_grad", "gradients disabled"), ("inference", "inference_mode"), ("frozen", "frozen"), ("cut", "graph was cut")],
)
def test_backward_without_a_graph_says_why(case: str, reason: str) -> None:
    model = nn.Linear(4, 1)
    x, y = torch.randn(8, 4), torch.randn(8, 1)

    def step() -> None:
        if case == "no_grad":
            with torch.no_grad():
                loss = F.mse_loss(model(x), y)
        elif case == "inference":
            with torch.inference_mode():
                loss = F.mse_loss(model(x), y)
        elif case == "frozen":
            model.requires_grad_(False)
            loss = F.mse_loss(model(x), y)
        else:
            loss = torch.tensor(F.mse_loss(model(x), y).item())
        loss.backward()

    finding = explained(step)
    assert finding.rule == "TD416" and reason in finding.message
    if case == "no_grad":  # the line to change: the block that turned gradients off, not backward()
        assert finding.line == line_of("with torch.no_grad():", step)


def test_backward_of_a_loss_computed_under_no_grad_names_it_and_the_block() -> None:
    """The model trained with autograd on before: the validation loss is the one without a graph."""
    model = nn.Linear(4, 1)
    x, y = torch.randn(8, 4), torch.randn(8, 1)

    def epoch() -> None:
        F.mse_loss(model(x), y).backward()
        with torch.no_grad():
            out = model(x)
            val_loss = F.mse_loss(out, y)
        val_loss.backward()

    finding = explained(epoch)
    block = line_of("with torch.no_grad():", epoch)
    assert finding.line == block
    assert f"`val_loss` was computed under the `torch.no_grad()` block at lines {block}-{block + 2}" in finding.message
    assert "`val_loss`" in finding.hint and "evaluation loss" in finding.hint


def test_backward_of_a_loss_of_a_no_grad_output_names_the_output_and_its_block() -> None:
    model = nn.Linear(4, 1)
    x, y = torch.randn(8, 4), torch.randn(8, 1)

    def step() -> None:
        F.mse_loss(model(x), y).backward()
        with torch.no_grad():
            output = model(x)
        loss = F.mse_loss(output, y)
        loss.backward()

    finding = explained(step)
    block = line_of("with torch.no_grad():", step)
    assert finding.line == block
    assert f"`loss` is computed from `output`, which was computed under the `torch.no_grad()` block at lines {block}-{block + 1}" in finding.message


def test_backward_of_a_loss_rebuilt_from_a_number_names_the_cut() -> None:
    model = nn.Linear(4, 1)
    x, y = torch.randn(8, 4), torch.randn(8, 1)

    def step() -> None:
        F.mse_loss(model(x), y).backward()
        loss = torch.tensor(F.mse_loss(model(x), y).item())
        loss.backward()

    finding = explained(step)
    line = line_of("loss = torch.tensor(", step)
    assert finding.line == line
    assert f"`loss` is built at line {line} from `torch.tensor(...)`: the graph was cut there" in finding.message


def test_backward_of_a_loss_of_a_detached_output_names_the_cut() -> None:
    model = nn.Linear(4, 1)
    x, y = torch.randn(8, 4), torch.randn(8, 1)

    def step() -> None:
        F.mse_loss(model(x), y).backward()
        loss = F.mse_loss(model(x).detach(), y)
        loss.backward()

    finding = explained(step)
    assert finding.line == line_of("loss = F.mse_loss(model(x).detach(), y)", step)
    assert "from `.detach()`" in finding.message and "without `.detach()`" in finding.hint


def test_backward_inside_a_no_grad_block_points_at_the_block() -> None:
    model = nn.Linear(4, 1)

    def step() -> None:
        with torch.no_grad():
            loss = F.mse_loss(model(torch.randn(8, 4)), torch.randn(8, 1))
            loss.backward()

    finding = explained(step)
    assert finding.rule == "TD416" and finding.line == line_of("with torch.no_grad():", step)
    assert "turns gradients off" in finding.message


def test_linear_built_for_another_input_size() -> None:
    net = Net()
    finding = explained(lambda: net(torch.randn(64, 512)))
    assert finding.rule == "TD417"
    assert finding.message == "Linear `fc` expects in_features=256 but gets 512 features per sample (input 64x512)"
    assert "in_features=512" in finding.hint


def test_channels_last_images_into_a_convolution() -> None:
    finding = explained(lambda: nn.Conv2d(3, 8, 3)(torch.randn(1, 32, 32, 3)))
    assert finding.rule == "TD417" and "permute(0, 3, 1, 2)" in finding.hint


def test_images_without_their_channel_dimension_into_a_convolution() -> None:
    """Conv2d reads a 3-D (16, 28, 28) batch as one unbatched image of 16 channels."""
    finding = explained(lambda: nn.Conv2d(1, 8, 3)(torch.randn(16, 28, 28)))
    assert finding.rule == "TD417" and "x.unsqueeze(1)" in finding.hint and "in_channels" not in finding.hint
    finding = explained(lambda: nn.Conv2d(3, 8, 3)(torch.randn(16, 28, 28)))
    assert "x.unsqueeze(0)" in finding.hint
    finding = explained(lambda: nn.Conv2d(3, 8, 3)(torch.randn(2, 16, 28, 28)))  # batched: a real channel mismatch
    assert "in_channels=16" in finding.hint


def test_integer_labels_into_binary_cross_entropy() -> None:
    scores, labels = torch.randn(8, 1, requires_grad=True), torch.randint(0, 2, (8, 1))
    finding = explained(lambda: nn.BCEWithLogitsLoss()(scores, labels))
    assert finding.rule == "TD429" and finding.message.startswith("BCEWithLogitsLoss gets targets of dtype int64")
    finding = explained(lambda: F.binary_cross_entropy(scores.sigmoid(), labels))
    assert finding.rule == "TD429" and finding.message.startswith("BCELoss gets targets of dtype int64")
    with pytest.raises(RuntimeError, match="Found dtype Double but expected Float") as caught:
        F.binary_cross_entropy(scores.sigmoid(), labels.double())  # float64 labels: a dtype mismatch, not integer labels
    assert binary_target_dtype(Crash.from_exception(caught.value), None) is None


def test_labels_and_logits_in_the_wrong_order() -> None:
    logits, labels = torch.randn(8, 3, requires_grad=True), torch.randint(0, 3, (8,))
    finding = explained(lambda: nn.CrossEntropyLoss()(labels, logits))
    assert finding.rule == "TD430" and "input is int64 [8], target is float32 [8, 3]" in finding.message
    finding = explained(lambda: F.log_softmax(labels, dim=0))
    assert finding.rule != "TD430"  # not inside a loss


def test_labels_and_log_probabilities_in_the_wrong_order_for_nll_loss() -> None:
    """NLLLoss answers swapped arguments with "multi-target not supported" (torch 2.13)."""
    log_probs, labels = torch.randn(8, 3, requires_grad=True).log_softmax(1), torch.randint(0, 3, (8,))
    finding = explained(lambda: F.nll_loss(labels, log_probs))
    assert finding.rule == "TD430" and "input is int64 [8], target is float32 [8, 3]" in finding.message
    finding = explained(lambda: nn.NLLLoss()(labels, log_probs))
    assert finding.rule == "TD430" and finding.message.startswith("NLLLoss got the labels as its input")


_MNIST_SWAPPED = """\
import torch
import torch.nn.functional as F
from torch import nn

model = nn.Sequential(nn.Flatten(), nn.Linear(28 * 28, 10), nn.LogSoftmax(dim=1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
data, target = torch.randn(16, 1, 28, 28), torch.randint(0, 10, (16,))
output = model(data)
loss = F.nll_loss(target, output)
loss.backward()
optimizer.step()
"""


@pytest.mark.slow
def test_swapped_nll_loss_arguments_in_a_real_script_are_td430_at_the_loss_line(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from tests.run.conftest import torchdoctor_run

    script = tmp_path / "mnist.py"
    script.write_text(_MNIST_SWAPPED, encoding="utf-8")
    ran = torchdoctor_run(str(script), cwd=tmp_path)
    assert ran.codes == {"TD430"}, ran.report.get("findings")
    finding = ran.finding("TD430")
    assert (finding["file"], finding["line"]) == ("mnist.py", 9)
    assert "input is int64 [16], target is float32 [16, 10]" in finding["message"]


def test_one_hot_targets_in_the_right_order_are_not_called_swapped() -> None:
    log_probs, labels = torch.randn(8, 3, requires_grad=True).log_softmax(1), torch.randint(0, 3, (8,))
    with pytest.raises(RuntimeError, match="multi-target not supported") as caught:
        F.nll_loss(log_probs, F.one_hot(labels, 3).float())  # a real multi-target mistake, arguments in order
    assert arguments_swapped(Crash.from_exception(caught.value), None) is None
    with pytest.raises(RuntimeError, match="multi-target not supported") as caught:
        F.nll_loss(labels.float().unsqueeze(1), F.one_hot(labels, 3).float())  # float input: not labels first
    assert arguments_swapped(Crash.from_exception(caught.value), None) is None


def test_class_targets_out_of_range_and_padding_labels() -> None:
    finding = explained(lambda: F.cross_entropy(torch.randn(4, 10), torch.tensor([1, 2, 10, 3])))
    assert finding.rule == "TD105" and finding.message.startswith("class targets reach 10 but the model outputs 10 classes")
    finding = explained(lambda: F.cross_entropy(torch.randn(4, 10), torch.tensor([1, -1, 2, 3])))
    assert "ignore_index=-1" in finding.hint


@pytest.mark.parametrize(
    "logits, target, rule, text",
    [
        (torch.randn(4, 10), torch.tensor([1.0, 2.0, 3.0, 4.0]), "TD106", "dtype float32"),
        (torch.randn(8, 20, 100), torch.randint(0, 100, (8, 20)), "TD418", "transpose(1, 2)"),
        (torch.randn(32, 10), torch.randint(0, 10, (16,)), "TD418", "32 rows but the target 16"),
        (torch.randn(4, 10), F.one_hot(torch.tensor([1, 2, 3, 4]), 10), "TD418", "one-hot"),
        (torch.randn(4, 10, 5), torch.randint(0, 10, (4, 3)), "TD418", "the target has shape [4, 3] but the input implies [4, 5]"),
    ],
    ids=["float-labels", "sequence-logits", "batch-sizes", "one-hot", "other-shape"],
)
def test_cross_entropy_targets(logits: torch.Tensor, target: torch.Tensor, rule: str, text: str) -> None:
    finding = explained(lambda: nn.CrossEntropyLoss()(logits, target))
    assert finding.rule == rule and (text in finding.message or text in finding.hint)


def test_embedding_id_past_the_table() -> None:
    embed = nn.Embedding(4, 3)
    finding = explained(lambda: embed(torch.tensor([[1, 4]])))
    assert finding.rule == "TD419" and "4 rows (ids 0..3) but receives id 4" in finding.message


def test_batchnorm_batch_of_one_names_the_short_last_batch() -> None:
    data = TensorDataset(torch.randn(33, 8))
    model = nn.Sequential(nn.Linear(8, 4), nn.BatchNorm1d(4))

    def epoch() -> None:
        for (x,) in DataLoader(data, batch_size=16):
            model(x)

    finding = explained(epoch)
    assert finding.rule == "TD423" and "33 samples, batch_size=16" in finding.message
    assert "drop_last=True" in finding.hint
    assert finding.line == line_of("DataLoader(data, batch_size=16)", epoch)  # where drop_last=True goes


def test_batchnorm_batch_of_one_without_a_data_loader_stays_at_the_call() -> None:
    model = nn.Sequential(nn.Linear(8, 4), nn.BatchNorm1d(4))

    def step() -> None:
        model(torch.randn(1, 8))

    finding = explained(step)
    assert finding.rule == "TD423" and finding.line == line_of("model(torch.randn(1, 8))", step)
    assert "a batch of one sample reached it" in finding.message and "model.eval()" in finding.hint


def test_missing_super_init_points_at_init() -> None:
    class NoInit(nn.Module):
        def __init__(self) -> None:
            self.fc = nn.Linear(2, 2)

    finding = explained(NoInit)
    assert finding.rule == "TD422" and finding.line == line_of("def __init__", NoInit)
    assert "NoInit.__init__" in finding.message


def test_weights_only_load_of_a_whole_module() -> None:
    buffer = io.BytesIO()
    torch.save(nn.Linear(2, 2), buffer)
    buffer.seek(0)
    finding = explained(lambda: torch.load(buffer))
    assert finding.rule == "TD421" and "torch.nn.modules.linear.Linear" in finding.message
    assert "state_dict" in finding.hint


class SavedConfig:
    """A class a checkpoint pickles, which the safe loader refuses."""


def test_weights_only_load_of_a_class_names_the_safe_global() -> None:
    buffer = io.BytesIO()
    torch.save({"config": SavedConfig()}, buffer)
    buffer.seek(0)
    finding = explained(lambda: torch.load(buffer))
    assert finding.rule == "TD421" and "SavedConfig, which the safe loader does not allow" in finding.message
    assert "`torch.serialization.add_safe_globals([SavedConfig])`" in finding.hint


def test_cpu_out_of_memory_of_one_huge_tensor() -> None:
    finding = explained(lambda: torch.empty(2**40))
    assert finding.rule == "TD424" and "4.0 TiB" in finding.message and "shape mistake" in finding.hint


@pytest.mark.parametrize(
    "message, hint",
    [
        (
            "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.25 GiB is free. "
            "Including non-PyTorch memory, this process has 77.89 GiB memory in use. Of the allocated memory 60.10 GiB is "
            "allocated by PyTorch, and 16.30 GiB is reserved by PyTorch but unallocated.",
            "expandable_segments",
        ),
        (
            "CUDA out of memory. Tried to allocate 60.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 20.00 GiB is free. "
            "Of the allocated memory 58.00 GiB is allocated by PyTorch, and 1.00 GiB is reserved by PyTorch but unallocated.",
            "shape mistake",
        ),
        (
            "CUDA out of memory. Tried to allocate 512.00 MiB. GPU 0 has a total capacity of 23.65 GiB of which 100.00 MiB is free. "
            "Of the allocated memory 22.00 GiB is allocated by PyTorch, and 300.00 MiB is reserved by PyTorch but unallocated.",
            "batch size",
        ),
    ],
    ids=["fragmented", "huge-request", "full"],
)
def test_cuda_out_of_memory_text(message: str, hint: str) -> None:
    try:
        raise torch.OutOfMemoryError(message)
    except torch.OutOfMemoryError as exc:
        (finding, _key), = explain(exc)
    assert finding.rule == "TD424" and "the GPU (79.15 GiB" in finding.message or "23.65" in finding.message
    assert hint in finding.hint


def test_numpy_of_a_tensor_in_the_graph() -> None:
    def step() -> None:
        prediction = nn.Linear(3, 1)(torch.randn(2, 3))
        prediction.numpy()

    finding = explained(step)
    assert finding.rule == "TD425" and "`prediction`" in finding.message


@pytest.mark.filterwarnings("ignore:Got pickle error")
def test_lambda_collate_fn_under_spawn_points_at_the_lambda() -> None:
    loader = DataLoader(
        TensorDataset(torch.randn(4, 2)), batch_size=2, num_workers=1, multiprocessing_context="spawn",
        collate_fn=lambda batch: batch,
    )
    finding = explained(lambda: next(iter(loader)))
    assert finding.rule == "TD142" and finding.severity.value == "error" and "a lambda" in finding.message
    assert finding.line == line_of("collate_fn=lambda", test_lambda_collate_fn_under_spawn_points_at_the_lambda)


WORKER_TEXT = """Caught IndexError in DataLoader worker process 1.
Original Traceback (most recent call last):
  File "/venv/lib/python3.11/site-packages/torch/utils/data/_utils/worker.py", line 349, in _worker_loop
    data = fetcher.fetch(index)
  File "{user}", line 12, in __getitem__
    return self.items[i]
           ~~~~~~~~~~^^^
IndexError: list index out of range
"""
SPAWN_TEXT = """

-- Process 1 terminated with the following error:
Traceback (most recent call last):
  File "/venv/lib/python3.11/site-packages/torch/multiprocessing/spawn.py", line 90, in _wrap
    fn(i, *args)
  File "{user}", line 20, in worker
    raise ValueError("rank 1 failed")
ValueError: rank 1 failed
"""


def test_worker_and_spawned_process_tracebacks_are_read_back(tmp_path) -> None:  # type: ignore[no-untyped-def]
    user = str(tmp_path / "train.py")
    (finding, _), = explain(IndexError(WORKER_TEXT.format(user=user)))
    assert (finding.rule, finding.file, finding.line) == ("TD001", user, 12)
    assert "IndexError: list index out of range (raised in DataLoader worker 1)" in finding.message
    (finding, _), = explain(RuntimeError(SPAWN_TEXT.format(user=user)))
    assert (finding.line, finding.rank) == (20, 1)


def test_bus_error_in_a_worker_is_shared_memory() -> None:
    try:
        try:
            raise RuntimeError(
                "DataLoader worker (pid 46794) is killed by signal: Bus error. It is possible that dataloader's "
                "workers are out of shared memory. Please try to raise your shared memory limit."
            )
        except RuntimeError as cause:
            raise RuntimeError("DataLoader worker (pid(s) 46794) exited unexpectedly") from cause
    except RuntimeError as exc:
        (finding, _), = explain(exc)
    assert finding.rule == "TD420" and "/dev/shm" in finding.message and "--shm-size" in finding.hint


class BusErrorInItemFive(torch.utils.data.Dataset):
    """Item 5 ends its worker with SIGBUS, as a full /dev/shm does."""

    def __len__(self) -> int:
        return 8

    def __getitem__(self, index: int) -> torch.Tensor:
        if index == 5:
            os.kill(os.getpid(), signal.SIGBUS)
        return torch.zeros(3)


@pytest.mark.slow
def test_worker_killed_is_explained_from_its_exit_code_when_the_message_has_no_signal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under load the loader can notice the dead worker before its SIGCHLD handler names the
    signal: the error then only says "exited unexpectedly" (or, when the worker died while
    sending a batch, the pipe is reset); the worker's exit code still says which signal.

    Which side wins that race depends on the machine, so the test takes the handler out of it:
    with SIGCHLD at its default, the loader can only find the dead worker itself."""
    monkeypatch.setattr(torch.utils.data._utils.signal_handling, "_set_SIGCHLD_handler", lambda: None)
    handler = signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    try:
        with pytest.raises((RuntimeError, ConnectionResetError, EOFError)) as caught, contextlib.redirect_stderr(io.StringIO()):
            for _ in DataLoader(BusErrorInItemFive(), batch_size=2, num_workers=2):
                pass
    finally:
        signal.signal(signal.SIGCHLD, handler)
    assert "is killed by signal" not in str(caught.value)
    found = worker_killed(Crash.from_exception(caught.value), None)  # its own message, not its cause's
    assert found is not None and found.rule.code == "TD420" and found.variant == "bus-error"


def test_a_reset_connection_outside_a_data_loader_is_not_a_killed_worker() -> None:
    try:
        raise ConnectionResetError(104, "Connection reset by peer")
    except ConnectionResetError as exc:
        (finding, _), = explain(exc)
    assert finding.rule == "TD001"


class GrowingSamples(torch.utils.data.Dataset):
    """Sample i has i + 5 rows: the default collate cannot stack them."""

    def __len__(self) -> int:
        return 8

    def __getitem__(self, index: int) -> torch.Tensor:
        return torch.zeros(index + 5, 4)


def first_batch(workers: int) -> list[tuple[Finding, str]]:
    try:
        next(iter(DataLoader(GrowingSamples(), batch_size=4, num_workers=workers)))  # the batch request
    except RuntimeError as exc:
        return explain(exc)
    raise AssertionError("the batch was stacked")


def test_samples_of_different_sizes_name_the_sizes_and_the_dataset() -> None:
    (finding, _), = first_batch(workers=0)
    assert finding.rule == "TD426" and finding.line == first_batch.__code__.co_firstlineno + 2
    assert "[5, 4] (sample 0 of the batch) and [6, 4] (sample 1), from GrowingSamples" in finding.message


@pytest.mark.slow
def test_samples_of_different_sizes_in_a_worker_point_at_the_batch_request() -> None:
    (finding, _), = first_batch(workers=2)
    assert finding.rule == "TD426" and finding.line == first_batch.__code__.co_firstlineno + 2


def test_a_stack_in_user_code_is_not_a_collate_problem() -> None:
    try:
        torch.stack([torch.zeros(2), torch.zeros(3)])
    except RuntimeError as exc:
        (finding, _), = explain(exc)
    assert finding.rule == "TD001"


def test_logits_into_bce_loss_name_the_range_at_the_loss_call() -> None:
    scores, targets = torch.tensor([[-1.5], [0.3], [2.0]]), torch.tensor([[0.0], [1.0], [1.0]])
    try:
        nn.BCELoss()(scores, targets)  # the loss call
    except RuntimeError as exc:
        (finding, _), = explain(exc)
    assert finding.rule == "TD108" and "from -1.5 to 2" in finding.message
    assert finding.line == test_logits_into_bce_loss_name_the_range_at_the_loss_call.__code__.co_firstlineno + 3


def test_targets_outside_0_1_are_not_logits() -> None:
    try:
        F.binary_cross_entropy(torch.full((3,), 0.5), torch.tensor([0.0, 2.0, 1.0]))
    except RuntimeError as exc:
        (finding, _), = explain(exc)
    assert finding.rule != "TD108"


def test_torchrun_relay_and_stops_are_not_crashes() -> None:
    class ChildFailedError(Exception):
        pass

    assert explain(ChildFailedError("rank 1 failed")) == []
    assert explain(KeyboardInterrupt()) == []
    assert explain(SystemExit(3)) == []


def test_crash_explained_without_torch_in_the_process() -> None:
    """Explaining never imports torch (a script can crash before it imports it)."""
    
    code = (
        "import sys\nfrom torchdoctor.observe.crash.explain import explain\n"
        "try:\n    {}['x']\nexcept KeyError as e:\n    found = explain(e)\n"
        "print(found[0][0].rule, 'torch' in sys.modules)"
    )
    result = children.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["TD001", "False"]
