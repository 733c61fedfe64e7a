"""Both sides of the checks on the model itself: devices, dtypes, gradient flow, registration."""

from __future__ import annotations

from tests.health.conftest import by_rule, codes, status
from torchdoctor.health.checks.devices import mismatch_fields, split_message

HEADER = "import torch\nfrom torch import nn\n"


# --- devices ------------------------------------------------------------------------------

def test_split_model_is_flagged_with_the_odd_modules() -> None:
    fields = split_message({"cpu": {"body", "head"}, "cuda:0": {"norm"}})
    assert fields is not None and fields["minority"] == "cuda" and "`norm`" in fields["modules"]
    assert split_message({"meta": {"fc"}, "cpu": {"a"}})["minority"] == "meta"  # type: ignore[index]


def test_model_parallel_on_several_gpus_is_not_flagged() -> None:
    assert split_message({"cuda:0": {"a"}, "cuda:1": {"b"}}) is None
    assert split_message({"cpu": {"a", "b"}}) is None


def test_device_mismatch_names_who_is_where() -> None:
    fields = mismatch_fields("forward pass", "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!",
                             {"cpu"}, {"cpu"}, set(), {"cuda:0": {"body", "head"}})
    assert fields["first"] == "the input batch" and fields["first_device"] == "cpu"
    assert fields["second_device"] == "cuda:0" and "`body`" in fields["second"]
    loss = mismatch_fields("loss", "...", {"cuda:0"}, {"cpu"}, {"cuda:0"}, {"cuda:0": {"fc"}})
    assert (loss["first"], loss["first_device"], loss["second_device"]) == ("the targets", "cpu", "cuda:0")
    inside = mismatch_fields("forward pass", "found at least two devices, cuda:0 and cpu!", {"cuda:0"}, set(), set(), {"cuda:0": {"fc"}})
    assert (inside["first_device"], inside["second_device"]) == ("cuda:0", "cpu")


def test_meta_parameters_left_by_a_partial_load_are_reported(check_source) -> None:  # type: ignore[no-untyped-def]
    report = check_source(HEADER + """
def make():
    with torch.device("meta"):
        model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    model.load_state_dict({"0.weight": torch.randn(8, 4), "0.bias": torch.zeros(8)}, strict=False, assign=True)
    return {"model": model, "data": (torch.randn(4, 4), torch.tensor([0, 1, 0, 1]))}
""")
    assert {"TD309", "TD410"} <= codes(report)
    assert "module `2`" in by_rule(report, "TD410")[0].message
    assert "TD300" not in codes(report)  # the crash is explained once
    assert status(report, "forward") == "failed" and status(report, "grad-flow") == "skipped"


# --- dtypes -------------------------------------------------------------------------------

def test_float64_throughout_is_deliberate(check_source) -> None:  # type: ignore[no-untyped-def]
    report = check_source(HEADER + """
def make():
    model = nn.Linear(4, 3).double()
    return {"model": model, "data": (torch.randn(8, 4, dtype=torch.float64), torch.arange(8) % 3), "loss_fn": nn.CrossEntropyLoss()}
""")
    assert "TD146" not in codes(report)


def test_float64_layer_in_a_float32_model_is_flagged(check_source) -> None:  # type: ignore[no-untyped-def]
    report = check_source(HEADER + """
def make():
    model = nn.Sequential(nn.Linear(4, 8), nn.Linear(8, 3))
    model[1].double()
    return {"model": model, "data": (torch.randn(8, 4), torch.arange(8) % 3)}
""")
    found = by_rule(report, "TD146")
    assert found and "1.weight" in found[0].message


def test_float64_inputs_that_the_model_casts_are_a_warning(check_source) -> None:  # type: ignore[no-untyped-def]
    report = check_source(HEADER + """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        return self.fc(x.float())

def make():
    x = torch.randn(8, 4, dtype=torch.float64)
    return {"model": Net(), "data": (x, torch.arange(8) % 3), "loss_fn": nn.CrossEntropyLoss()}
""")
    found = by_rule(report, "TD146")
    assert found and found[0].severity.value == "warning" and found[0].line == 13  # the line that made x


def test_bfloat16_on_cpu_is_fine(check_source) -> None:  # type: ignore[no-untyped-def]
    report = check_source(HEADER + """
def make():
    model = nn.Linear(4, 3).to(torch.bfloat16)
    return {"model": model, "data": (torch.randn(8, 4, dtype=torch.bfloat16), torch.arange(8) % 3), "loss_fn": nn.CrossEntropyLoss()}
""")
    assert "TD310" not in codes(report)


# --- gradient flow ------------------------------------------------------------------------

def test_frozen_layers_are_not_an_alarm(check_source) -> None:  # type: ignore[no-untyped-def]
    report = check_source(HEADER + """
def make():
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6 * 6, 2))
    model[0].requires_grad_(False)
    return {"model": model, "data": (torch.randn(8, 3, 8, 8), torch.arange(8) % 2), "loss_fn": nn.CrossEntropyLoss()}
""")
    assert "TD120" not in codes(report)
    assert status(report, "grad-flow") == "passed"


def test_conv_bias_before_batchnorm_is_not_an_alarm(check_source) -> None:  # type: ignore[no-untyped-def]
    # its gradient is zero in exact arithmetic, but not in floating point: nothing to report
    report = check_source(HEADER + """
def make():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3, bias=True), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6 * 6, 2))
    return {"model": model, "data": (torch.randn(8, 3, 8, 8), torch.arange(8) % 2), "loss_fn": nn.CrossEntropyLoss()}
""")
    assert "TD120" not in codes(report)


def test_a_module_that_never_runs_is_named(check_source) -> None:  # type: ignore[no-untyped-def]
    report = check_source(HEADER + """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 8)
        self.aux = nn.Linear(8, 3)
        self.head = nn.Linear(8, 3)

    def forward(self, x):
        return self.head(torch.relu(self.body(x)))

def make():
    return {"model": Net(), "data": (torch.randn(8, 4), torch.arange(8) % 3), "loss_fn": nn.CrossEntropyLoss()}
""")
    found = by_rule(report, "TD120")
    assert len(found) == 1 and "aux.weight" in found[0].message and "never runs" in found[0].message
    assert found[0].line == 8  # self.aux = nn.Linear(8, 3)


def test_a_graph_cut_is_located_at_the_cutting_line(check_source) -> None:  # type: ignore[no-untyped-def]
    report = check_source(HEADER + """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 8)
        self.head = nn.Linear(8, 3)

    def forward(self, x):
        h = torch.relu(self.body(x))
        scale = h.norm().item()  # a logged number: harmless
        h = h.data  # the cut
        return self.head(h) * (scale > 0)

def make():
    return {"model": Net(), "data": (torch.randn(8, 4), torch.arange(8) % 3), "loss_fn": nn.CrossEntropyLoss()}
""")
    found = by_rule(report, "TD120")
    assert len(found) == 1 and found[0].line == 13 and "`.data`" in found[0].message
    assert "body.weight" in found[0].message and "head" not in found[0].message


def test_a_loss_rewrapped_with_torch_tensor_starves_every_parameter(check_source) -> None:  # type: ignore[no-untyped-def]
    report = check_source(HEADER + """
def rewrapped(output, target):
    loss = nn.functional.cross_entropy(output, target)
    return torch.tensor(loss.item(), requires_grad=True)

def make():
    return {"model": nn.Linear(4, 3), "data": (torch.randn(8, 4), torch.arange(8) % 3), "loss_fn": rewrapped}
""")
    found = by_rule(report, "TD120")
    assert found and found[0].line == 6 and "the loss" in found[0].message


def test_everything_frozen(check_source) -> None:  # type: ignore[no-untyped-def]
    report = check_source(HEADER + """
def make():
    model = nn.Linear(4, 3).requires_grad_(False)
    return {"model": model, "data": (torch.randn(8, 4), torch.arange(8) % 3), "loss_fn": nn.CrossEntropyLoss()}
""")
    assert "TD315" in codes(report) and "TD120" not in codes(report)


# --- registration -------------------------------------------------------------------------

def test_a_convenience_list_of_registered_layers_is_fine(check_source) -> None:  # type: ignore[no-untyped-def]
    report = check_source(HEADER + """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4), nn.Linear(4, 3)])
        self.by_name = {"first": self.layers[0], "last": self.layers[1]}
        self.activations = [nn.ReLU()]

    def forward(self, x):
        return self.by_name["last"](self.activations[0](self.by_name["first"](x)))

def make():
    return {"model": Net(), "data": (torch.randn(8, 4), torch.arange(8) % 3), "loss_fn": nn.CrossEntropyLoss()}
""")
    assert not {"TD122", "TD123"} & codes(report)


def test_a_frozen_teacher_hidden_on_purpose_is_fine(check_source) -> None:  # type: ignore[no-untyped-def]
    report = check_source(HEADER + """
class Student(nn.Module):
    def __init__(self, teacher):
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self._teacher = [teacher.requires_grad_(False).eval()]  # kept out of state_dict()

    def forward(self, x):
        with torch.no_grad():
            hint = self._teacher[0](x)
        return self.fc(x) + 0 * hint

def make():
    return {"model": Student(nn.Linear(4, 3)), "data": (torch.randn(8, 4), torch.arange(8) % 3), "loss_fn": nn.CrossEntropyLoss()}
""")
    assert "TD122" not in codes(report)


def test_parameters_in_a_plain_dict_and_a_hidden_dropout_are_flagged(check_source) -> None:  # type: ignore[no-untyped-def]
    report = check_source(HEADER + """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.scales = {"a": nn.Parameter(torch.ones(3))}
        self.extra = (nn.Dropout(0.5),)

    def forward(self, x):
        return self.extra[0](self.fc(x)) * self.scales["a"]

def make():
    return {"model": Net(), "data": (torch.randn(8, 4), torch.arange(8) % 3), "loss_fn": nn.CrossEntropyLoss()}
""")
    found = {f.line: f.message for f in by_rule(report, "TD122")}
    assert set(found) == {8, 9}, found
    assert "an nn.Parameter" in found[8] and "dict" in found[8] and "tuple" in found[9]
    assert "TD305" in codes(report)  # the hidden dropout still drops in eval mode


def test_deliberate_freezing_by_no_grad_or_detach_is_not_an_error(check_source) -> None:  # type: ignore[no-untyped-def]
    source = HEADER + """
class Probe(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(4, 8), nn.ReLU())
        self.head = nn.Linear(8, 3)

    def forward(self, x):
        FREEZE
        return self.head(features)

def make():
    model = Probe()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    return {"model": model, "data": (torch.randn(8, 4), torch.arange(8) % 3), "loss_fn": nn.CrossEntropyLoss(), "optimizer": optimizer}
"""
    no_grad = check_source(source.replace("FREEZE", "with torch.no_grad():\n            features = self.encoder(x)"))
    assert "TD120" not in codes(no_grad) and "frozen on purpose" in next(c.detail for c in no_grad.checks if c.name == "grad-flow")
    detached = by_rule(check_source(source.replace("FREEZE", "features = self.encoder(x).detach()")), "TD120")
    assert detached and detached[0].severity.value == "warning" and "requires_grad_(False)" in detached[0].message
    round_trip = by_rule(check_source(source.replace("FREEZE", "features = torch.from_numpy(self.encoder(x).detach().numpy())")), "TD120")
    assert round_trip and round_trip[0].severity.value == "error" and "`.detach().numpy()`" in round_trip[0].message
