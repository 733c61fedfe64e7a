"""TD484 dead units, TD485 saturated activations, TD486 vanishing gradients, TD487 activation
scale with depth: both sides, in-process, real torch training loops."""

from __future__ import annotations

import torch
from torch import nn

from tests.observe.detectors.conftest import line_of, observing, run_lab
from torchdoctor.observe.detectors.units import ActivationScale, InactiveUnits, VanishingGradients

HERE = __file__
UNITS = (InactiveUnits, VanishingGradients, ActivationScale)


def data(n=512, features=16, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, features, generator=gen)
    return x, (x[:, 0] > 0).long() + 2 * (x[:, 1] > 0).long()


class Net(nn.Module):
    def __init__(self, activation=nn.ReLU, features=16, hidden=64, depth=2):
        super().__init__()
        layers = []
        for i in range(depth):
            layers += [nn.Linear(features if i == 0 else hidden, hidden), activation()]
        self.body = nn.Sequential(*layers)  # the body's line
        self.head = nn.Linear(hidden, 4)

    def forward(self, x):
        return self.head(self.body(x))


def train(model, lr=0.05, steps=40, features=16, evaluate=False, optimizer=None):
    torch.manual_seed(0)
    x, y = data(features=features)
    optimizer = optimizer or torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    for step in range(steps):
        batch = torch.arange(step * 32, step * 32 + 32) % len(x)
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x[batch]), y[batch]).backward()
        optimizer.step()
        if evaluate:
            model.eval()
            with torch.no_grad():
                model(torch.full((64, features), -100.0))  # an evaluation on odd inputs is not the training's
            model.train()


def found(model, **kwargs):
    with observing(*UNITS) as seen:
        train(model, **kwargs)
    return seen


def test_units_killed_by_a_learning_rate_too_large_are_found_at_the_layer():
    torch.manual_seed(0)
    finding = found(Net(), lr=3.0).one("TD484")
    assert finding.line == line_of(HERE, "# the body's line")
    assert "`body.3` (nn.ReLU)" in finding.message and "lr is 3" in finding.message
    assert "step 32: 100%" in finding.message and "biases of `body.2`" in finding.message
    assert finding.evidence["shares"][0] == [1, 0.0]  # alive at the first step


def test_a_correct_learning_rate_and_an_evaluation_on_odd_inputs_are_silent():
    torch.manual_seed(0)
    assert found(Net(), lr=0.05, evaluate=True).codes == set()


def test_units_dead_from_the_first_step_name_the_initialisation():
    torch.manual_seed(0)
    model = Net()
    with torch.no_grad():
        model.body[2].bias.fill_(-5.0)  # every unit of the second layer starts below zero
    finding = found(model, lr=1e-4, steps=40).one("TD484")
    assert "already at the first step" in finding.message and "standard deviation" in finding.message


def test_a_relu_reused_for_several_layers_is_judged_per_call():
    class Shared(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b, self.head = nn.Linear(16, 64), nn.Linear(64, 64), nn.Linear(64, 4)
            self.act = nn.ReLU()  # the shared activation

        def forward(self, x):
            return self.head(self.act(self.b(self.act(self.a(x)))))

    torch.manual_seed(0)
    finding = found(Shared(), lr=3.0).one("TD484")
    assert finding.line == line_of(HERE, "# the shared activation")
    torch.manual_seed(0)
    assert found(Shared(), lr=0.05).codes == set()


def test_sigmoids_fed_by_a_large_initialisation_are_found_and_the_default_is_silent():
    torch.manual_seed(0)
    model = Net(nn.Sigmoid, features=64, hidden=512)
    for layer in model.body:
        if isinstance(layer, nn.Linear):
            nn.init.normal_(layer.weight, std=1.0)
    finding = found(model, lr=0.1, steps=10, features=64).one("TD485")
    assert finding.line == line_of(HERE, "# the body's line")
    assert "(|x| > 6" in finding.message and "standard deviation of 1" in finding.message
    torch.manual_seed(0)
    assert found(Net(nn.Sigmoid, features=64, hidden=512), lr=0.1, steps=10, features=64).codes == set()
    torch.manual_seed(0)
    assert found(Net(nn.Tanh, features=64, hidden=512), lr=0.1, steps=10, features=64).codes == set()


def test_a_deep_plain_sigmoid_net_has_vanishing_gradients_and_normalised_layers_do_not():
    torch.manual_seed(0)
    finding = found(Net(nn.Sigmoid, depth=12), lr=0.1, steps=5).one("TD486")
    assert finding.line == line_of(HERE, "# the body's line")
    assert "`body.0.weight`" in finding.message
    assert finding.evidence["rms"]["head.weight"] > 1e4 * finding.evidence["rms"]["body.0.weight"]

    class Normalised(nn.Module):
        def __init__(self):
            super().__init__()
            layers = [nn.Linear(16, 64), nn.LayerNorm(64), nn.ReLU()]
            for _ in range(11):
                layers += [nn.Linear(64, 64), nn.LayerNorm(64), nn.ReLU()]
            self.body, self.head = nn.Sequential(*layers), nn.Linear(64, 4)

        def forward(self, x):
            return self.head(self.body(x))

    torch.manual_seed(0)
    assert found(Normalised(), lr=0.1, steps=5).codes == set()
    torch.manual_seed(0)
    assert found(Net(nn.ReLU, depth=4), lr=0.05, steps=5).codes == set()


def test_activations_that_grow_with_depth_are_a_warning_and_a_collapse_is_info():
    torch.manual_seed(0)
    big = Net(nn.ReLU, features=64, hidden=64, depth=8)
    for layer in big.body:
        if isinstance(layer, nn.Linear):
            nn.init.normal_(layer.weight, std=0.5)
    finding = found(big, lr=1e-9, steps=3, features=64).one("TD487")
    assert finding.severity.value == "warning" and "grows" in finding.message
    assert finding.line == line_of(HERE, "# the body's line")

    torch.manual_seed(0)
    small = Net(nn.ReLU, features=64, hidden=64, depth=8)
    for layer in small.body:
        if isinstance(layer, nn.Linear):
            nn.init.normal_(layer.weight, std=0.03)
    assert found(small, lr=1e-9, steps=3, features=64).one("TD487").severity.value == "info"

    torch.manual_seed(0)
    kaiming = Net(nn.ReLU, features=64, hidden=64, depth=8)
    for layer in kaiming.body:
        if isinstance(layer, nn.Linear):
            nn.init.kaiming_normal_(layer.weight, nonlinearity="relu")
    assert found(kaiming, lr=1e-3, steps=3, features=64).codes == set()


def test_sampling_watches_only_the_sampled_forwards():
    """After the warm-up the global forward hook is on only for the forward of a sampled step
    (8), and off again from the next step: the other steps cost nothing."""
    from torch.nn.modules import module as module_hooks

    torch.manual_seed(0)
    model, (x, y) = Net(), data()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    hooks = {}
    with observing(InactiveUnits):
        for step in range(1, 12):
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x[:32]), y[:32]).backward()
            optimizer.step()
            hooks[step] = len(module_hooks._global_forward_hooks)
    assert hooks[7] > hooks[5] and hooks[8] == hooks[9] == hooks[11] == hooks[5]


def test_lab_programs_and_their_fixed_twins():
    assert run_lab("57_relu_units_killed_by_learning_rate.py", UNITS, steps=40).one("TD484").line == 20
    assert run_lab("57_relu_units_killed_by_learning_rate.py", UNITS, fixed=True, steps=40).codes == set()
    assert run_lab("58_sigmoid_mlp_large_init.py", UNITS, steps=10).one("TD485").line == 20
    assert run_lab("58_sigmoid_mlp_large_init.py", UNITS, fixed=True, steps=10).codes == set()
    assert run_lab("59_deep_sigmoid_net_vanishing_gradients.py", UNITS, steps=6).one("TD486").line == 20
    assert run_lab("59_deep_sigmoid_net_vanishing_gradients.py", UNITS, fixed=True, steps=6).codes == set()
