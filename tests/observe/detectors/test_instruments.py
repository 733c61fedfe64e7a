"""The on-demand instruments the silent-bug detectors ask for: they observe and change
nothing, and the session puts every patched attribute back."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.amp import GradScaler
from torch.utils.data import DataLoader
from torch.utils.data._utils import fetch

from tests.observe.detectors.conftest import line_of
from torchdoctor.observe.instruments.clipping import GradientClipping
from torchdoctor.observe.instruments.dropout import FunctionalDropout
from torchdoctor.observe.instruments.grad_calls import GradCalls
from torchdoctor.observe.instruments.loader_sites import LoaderSites
from torchdoctor.observe.instruments.modes import ModeSwitches
from torchdoctor.observe.instruments.worker_fetch import FirstFetch
from torchdoctor.observe.outcome import Outcome
from torchdoctor.observe.session import Session

HERE = __file__
PATCHED = [
    (nn.Module, "train"), (F, "dropout"), (F, "dropout2d"), (torch.autograd, "grad"), (DataLoader, "__init__"),
    (torch.nn.utils, "clip_grad_norm_"), (torch.nn.utils.clip_grad, "clip_grad_value_"), (GradScaler, "scale"),
    (GradScaler, "unscale_"), (GradScaler, "update"), (fetch._MapDatasetFetcher, "fetch"),
]


def test_instruments_are_shared_and_undone_with_the_session() -> None:
    originals = [getattr(owner, name) for owner, name in PATCHED]
    session = Session.start(emit=lambda finding, key: None, detectors=())
    try:
        kinds = (ModeSwitches, FunctionalDropout, GradCalls, LoaderSites, GradientClipping, FirstFetch)
        instruments = [session.instrument(kind) for kind in kinds]
        assert [session.instrument(kind) for kind in kinds] == instruments
        assert all(getattr(owner, name) is not original for (owner, name), original in zip(PATCHED, originals))
    finally:
        session.finish(Outcome())
        session.uninstall()
    assert all(getattr(owner, name) is original for (owner, name), original in zip(PATCHED, originals))


def test_mode_switches_record_the_outermost_call_with_its_line() -> None:
    session = Session.start(emit=lambda finding, key: None, detectors=())
    try:
        switches = session.instrument(ModeSwitches)
        seen = []
        switches.listen(seen.append)
        model = nn.Sequential(nn.Linear(2, 2), nn.Dropout())
        model.eval()  # the switch
        assert [(s.module, s.training) for s in seen] == [(model, False)]
        assert switches.last[model].location == (HERE, line_of(HERE, "model.eval()  # the switch"))
        assert not model[1].training and model.train() is model and model[1].training
    finally:
        session.uninstall()


def test_functional_dropout_reports_only_calls_without_training() -> None:
    session = Session.start(emit=lambda finding, key: None, detectors=())
    try:
        calls = []
        session.instrument(FunctionalDropout).listen(lambda name, p, frame: calls.append((name, p, frame.f_lineno)))
        x = torch.ones(4)
        torch.manual_seed(0)
        observed = F.dropout(x, 0.25)  # no training argument
        F.dropout(x, 0.25, False)
        F.dropout2d(torch.ones(1, 2, 2, 2), p=0.5, training=False)
        nn.Dropout(0.3).eval()(x)
        torch.manual_seed(0)
        assert torch.equal(observed, F.dropout(x, 0.25))
        assert calls[0] == ("dropout", 0.25, line_of(HERE, "# no training argument"))
        assert len(calls) == 2  # the two unobserved-argument calls: the one above and the last
    finally:
        session.uninstall()


def test_grad_calls_and_loader_sites() -> None:
    session = Session.start(emit=lambda finding, key: None, detectors=())
    try:
        grads = session.instrument(GradCalls)
        sites = session.instrument(LoaderSites)
        x = torch.ones(2, requires_grad=True)
        torch.autograd.grad((x * 2).sum(), x)
        loader = DataLoader([1, 2, 3], batch_size=2)  # built here
        assert grads.calls == 1
        assert sites.of(loader) == (HERE, line_of(HERE, "# built here"))
        assert [batch.tolist() for batch in loader] == [[1, 2], [3]]
    finally:
        session.uninstall()
