"""The mutation bench's operators on small inputs: each changes what it says, where it says,
keeps the file valid and its line numbering, and leaves alone the places where the change
would be no bug. (The bench itself needs a corpus outside the repository; these do not.)"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest
from tests.bench.bench_module import load

BENCH = Path(__file__).resolve().parents[2] / "bench"


ops = load("mutation.operators", "mutation/operators.py")

PROGRAM = textwrap.dedent('''\
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.utils.data import DataLoader, DistributedSampler


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(8, 16)
            self.drop = nn.Dropout(0.5)
            self.blocks = nn.ModuleList([nn.Linear(16, 16) for _ in range(2)])
            self.scale = nn.Parameter(torch.ones(16))
            self.rnn = nn.LSTM(16, 16, batch_first=True)
            self.fc2 = nn.Linear(16, 4)
            nn.init.normal_(self.fc2.weight, 0.0, 0.02)

        def forward(self, x):
            h = F.relu(self.fc1(x))
            h = self.drop(h)
            return self.fc2(h * self.scale)


    def evaluate(model, loader):
        model.eval()
        total = 0
        with torch.no_grad():
            for x, y in loader:
                total += F.cross_entropy(model(x), y).item()
        return total


    def train(model, loader, sampler, criterion, device, epochs):
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(epochs):
            sampler.set_epoch(epoch)
            model.train()
            running = 0.0
            for x, y in loader:
                x = x.to(device)
                optimizer.zero_grad()
                out = model(x)
                loss = criterion(out, y)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                running += loss.item()
            evaluate(model, loader)


    def main(dataset):
        loader = DataLoader(dataset, batch_size=8, shuffle=True)
        model = Net()
        criterion = nn.CrossEntropyLoss()
        train(model, loader, DistributedSampler(dataset), criterion, "cpu", 2)
''')

# operator -> (line of the first mutation, text of that line after the change)
EXPECTED = {
    "drop_zero_grad": (41, "pass"),
    "zero_grad_after_backward": (44, "loss.backward(); optimizer.zero_grad()"),
    "drop_step": (46, "pass"),
    "drop_backward": (44, "pass"),
    "step_before_backward": (44, "optimizer.step(); loss.backward()"),
    "lr_x100": (34, "lr=(0.1) * 100"),
    "lr_tiny": (34, "lr=(0.1) * 1e-4"),
    "layer_replaced_after_optimizer": None,   # the model is a parameter here: its class is unknown
    "optimizer_recreated_in_loop": (40, "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)"),
    "clip_before_backward": (44, "clip_grad_norm_(model.parameters(), 1.0); loss.backward()"),
    "drop_grad_clipping": (45, "pass"),
    "loss_negated": (43, "loss = -(criterion(out, y))"),
    "reduction_sum": None,   # criterion is an object: nothing to add the keyword to
    "drop_train_call": (37, "pass"),
    "drop_eval_call": (25, "pass"),
    "train_to_eval": (37, "model.eval()"),
    "eval_not_called": (25, "model.eval"),
    "functional_dropout": (20, "h = torch.nn.functional.dropout(h, p=self.drop.p)"),
    "softmax_before_cross_entropy": (43, "loss = criterion(torch.softmax(out, dim=1), y)"),
    "log_softmax_to_softmax": None,          # no NLLLoss here
    "sigmoid_before_bce_with_logits": None,
    "sigmoid_removed_before_bce": None,
    "softmax_over_batch": None,
    "softmax_implicit_dim": None,
    "loss_arguments_swapped": (43, "loss = criterion(y, out)"),
    "target_broadcast": None,
    "target_out_of_range": (43, "loss = criterion(out, (y + 1))"),
    "target_float": (43, "loss = criterion(out, y.float())"),
    "input_float64": (42, "out = model(x.double())"),
    "forward_under_no_grad": (42, "with torch.no_grad(): out = model(x)"),
    "no_grad_decorator_on_training": (33, "@torch.no_grad()"),
    "missing_to_device": (40, "x = x"),
    "to_device_discarded": (40, "x.to(device)"),
    "labels_misaligned": (40, "y = y.roll(1, 0); x = x.to(device)"),
    "no_shuffle": (52, "shuffle=False"),
    "drop_set_epoch": (36, "pass"),
    "drop_batch_first": (14, "self.rnn = nn.LSTM(16, 16)"),
    "detach_in_forward": (19, "h = F.relu(self.fc1(x)).detach()"),
    "data_in_forward": (19, "h = F.relu(self.fc1(x)).data"),
    "loss_rewrapped": (43, "loss = torch.tensor(criterion(out, y).item(), requires_grad=True)"),
    "modules_in_plain_list": (12, "self.blocks = list("),
    "parameter_as_plain_tensor": (13, "self.scale = torch.ones(16).requires_grad_()"),
    "hidden_state_not_detached": None,
    "inplace_on_saved_output": (19, "h = F.relu(self.fc1(x)); h += 1e-8"),
    "missing_super_init": (9, "pass"),
    "loss_accumulated_with_history": (47, "running += loss"),
    "retain_graph_in_loop": (44, "loss.backward(retain_graph=True)"),
    "evaluation_with_grad": (27, "with torch.enable_grad():"),
    "init_scale_x1000": (16, "nn.init.normal_(self.fc2.weight, 0.0, (0.02) * 1000)"),
}


def test_every_operator_is_tested_here():
    assert set(EXPECTED) == set(ops.OPERATORS)
    assert len(ops.OPERATORS) >= 40


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_first_mutation(name):
    found = list(ops.mutants(PROGRAM, name))
    if EXPECTED[name] is None:
        assert found == []
        return
    line, text = EXPECTED[name]
    first = found[0]
    assert first.operator == name
    ast.parse(first.source)
    new_lines = first.source.splitlines()
    assert line in first.lines
    assert text in new_lines[line - 1]
    if first.inserted is None:        # the numbering of every other line is kept
        assert len(new_lines) == len(PROGRAM.splitlines())
        changed = [i + 1 for i, (a, b) in enumerate(zip(PROGRAM.splitlines(), new_lines)) if a != b]
        assert tuple(changed) == first.lines
    else:
        assert len(new_lines) == len(PROGRAM.splitlines()) + 1
        assert new_lines[line:] == PROGRAM.splitlines()[line - 1:]


def test_mode_operators_need_layers_that_depend_on_the_mode():
    plain = PROGRAM.replace("nn.Dropout(0.5)", "nn.Identity()").replace("self.drop", "self.ident")
    for name in ("drop_train_call", "drop_eval_call", "train_to_eval", "eval_not_called"):
        assert list(ops.mutants(plain, name)) == []


def test_drop_train_call_needs_an_eval_somewhere():
    source = PROGRAM.replace("model.eval()", "pass")
    assert list(ops.mutants(source, "drop_train_call")) == []


def test_learning_rate_set_at_each_step_is_left_alone():
    project = "for g in optimizer.param_groups:\n    g['lr'] = lr\n"
    assert list(ops.mutants(PROGRAM, "lr_x100", project)) == []
    assert list(ops.mutants(PROGRAM, "lr_x100"))


def test_loss_operators_follow_functional_losses_and_their_kinds():
    source = textwrap.dedent('''\
        import torch
        import torch.nn.functional as F

        def step(model, x, y, t, opt):
            logp = F.log_softmax(model(x), dim=1)
            probs = torch.sigmoid(model(x))
            loss = F.nll_loss(logp, y) + F.binary_cross_entropy(probs, t) + F.mse_loss(model(x), t)
            loss.backward()
            opt.step()
    ''')
    first = {name: next(ops.mutants(source, name), None) for name in ops.OPERATORS}
    assert "F.softmax(model(x), dim=1)" in first["log_softmax_to_softmax"].source
    assert "probs = model(x)" in first["sigmoid_removed_before_bce"].source
    assert "F.mse_loss(model(x), t.unsqueeze(-1))" in first["target_broadcast"].source
    assert "F.nll_loss(logp, y.float())" in first["target_float"].source
    assert "dim=0" in first["softmax_over_batch"].source
    assert "F.log_softmax(model(x))" in first["softmax_implicit_dim"].source
    assert first["reduction_sum"] is None            # no SGD, no hand-written update
    sgd = source + "\nopt = torch.optim.SGD([], lr=0.1)\n"
    assert "F.nll_loss(logp, y, reduction='sum')" in next(ops.mutants(sgd, "reduction_sum")).source


def test_layer_replaced_after_the_optimizer_of_a_model_built_here():
    source = PROGRAM + "    opt = torch.optim.Adam(model.parameters())\n"
    m = next(ops.mutants(source, "layer_replaced_after_optimizer"))
    assert m.source.splitlines()[-1].endswith(
        "; model.fc2 = torch.nn.Linear(model.fc2.in_features, model.fc2.out_features)")


def test_hidden_state_carried_across_batches():
    source = textwrap.dedent('''\
        def train(model, batches, hidden, opt):
            for x, y in batches:
                hidden = repackage_hidden(hidden)
                out, hidden = model(x, hidden)
                out.sum().backward()
    ''')
    m = next(ops.mutants(source, "hidden_state_not_detached"))
    assert m.lines == (3,) and m.source.splitlines()[2].strip() == "pass"


def test_nothing_changes_where_nothing_matches():
    for name in ops.OPERATORS:
        assert list(ops.mutants("x = 1\nprint(x)\n", name)) == []
