"""Nothing torchdoctor attaches is visible to, or travels with, the user's objects.

Observation goes through torch's global hooks and class-level stand-ins, never through the
user's modules and tensors: their hook dictionaries, `repr`, `state_dict` and pickles are
what they are without torchdoctor, during warm-up (when torchdoctor observes closely) and
after it (when the NaN watch and the eval-mode detectors watch particular models).
"""

from __future__ import annotations

import copy
import gc
import io
import pickle
import warnings
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

import torchdoctor
from torchdoctor.observe.session import Session


def hooks_on(model: nn.Module) -> list[Any]:
    found: list[Any] = []
    for module in model.modules():
        for name in ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks",
                     "_state_dict_hooks", "_load_state_dict_pre_hooks", "_forward_hooks_with_kwargs"):
            found.extend(getattr(module, name, {}).values())
    found.extend(p._backward_hooks for p in model.parameters() if p._backward_hooks)
    return found


def check_untouched(model: nn.Module, x: torch.Tensor, before: str) -> None:
    assert hooks_on(model) == []
    assert repr(model) == before
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "backward hook ... will not be serialized" would raise
        buffer = io.BytesIO()
        torch.save(model, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer, weights_only=False)
    assert hooks_on(loaded) == [] and loaded.state_dict().keys() == model.state_dict().keys()
    assert hooks_on(copy.deepcopy(model)) == []
    pickle.loads(pickle.dumps(model))
    training = model.training
    model.eval()
    with warnings.catch_warnings():
        warnings.simplefilter("error", torch.jit.TracerWarning)  # torchdoctor code traced by the user's jit.trace
        torch.jit.trace(model, x)
        torch.jit.script(model)
    model.train(training)


def test_nothing_travels_with_the_model_during_and_after_warm_up() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.2), nn.Linear(16, 3))
    before = repr(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(32, 8), torch.randint(0, 3, (32,))
    with torchdoctor.watch() as watched:
        session = Session.current()
        for step in range(20):
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            if step in (1, 2):  # warm-up: gradient observers are on the graph, not on the parameters
                assert session is not None and session.warmup
                check_untouched(model, x, before)
            optimizer.step()
            if step % 5 == 4:  # evaluation phases: the mode detectors watch the model now
                model.eval()
                with torch.no_grad():
                    for _ in range(4):
                        model(x)
                model.train()
                check_untouched(model, x, before)
        assert session is not None and not session.warmup and session.modules._watches  # watched, not hooked
        check_untouched(model, x, before)
    assert watched.report.findings == []


def test_a_watch_is_called_after_each_forward_and_goes_with_its_module() -> None:
    calls: list[tuple[Any, ...]] = []
    with torchdoctor.watch():
        session = Session.current()
        assert session is not None
        session.modules.stop()  # not closely: only the watch keeps the global hook on
        model = nn.Linear(3, 2)
        handle = session.modules.watch(model, lambda module, args, kwargs, output: calls.append((module, args[0].shape, output.shape)))
        model(torch.randn(4, 3))
        assert calls == [(model, torch.Size([4, 3]), torch.Size([4, 2]))]
        handle.remove()
        model(torch.randn(4, 3))
        assert len(calls) == 1 and not nn.modules.module._global_forward_hooks
        other = nn.Linear(3, 2)
        session.modules.watch(other, lambda *args: None)
        assert nn.modules.module._global_forward_hooks
        del other
        gc.collect()
        assert not session.modules._watches and not nn.modules.module._global_forward_hooks


class CountsItsCalls(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        self.last_batch = x.shape[0]
        return self.fc(x)


def test_a_replayed_forward_leaves_the_modules_attributes_as_the_real_calls_left_them() -> None:
    """During the warm-up a compiled model's forward is replayed eagerly under the loss code's
    trace; a counter it keeps in a Python attribute still counts the script's calls only."""
    torch._dynamo.reset()
    model = CountsItsCalls()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with torchdoctor.watch():
        compiled = torch.compile(model, backend="eager")
        for batch in (2, 2, 2, 2, 2):
            loss = compiled(torch.randn(batch, 4)).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    assert (model.calls, model.last_batch) == (5, 2)
