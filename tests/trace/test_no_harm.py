"""First, do no harm, under `torchdoctor trace` too: the profiler and the line marks change no
result (the same scripts as run's no-harm test, bit for bit; see tests/run/test_no_harm.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.run.conftest import SCRIPTS, python
from tests.run.test_no_harm import same_bits, saved, warnings_of
from tests.trace.conftest import torchdoctor_trace

#: dropout and batch norm, workers drawing random numbers and accumulation, weights updated by
#: hand, an RNN with AdamW, whole-model saves and deepcopy, a compiled module
TRACED = ("mlp_dropout_batchnorm", "cnn_workers_accumulation", "manual_sgd_no_optimizer", "rnn_adamw_functional",
          "whole_model_save_ema_snapshot", "compile_module_inductor")


@pytest.mark.slow
@pytest.mark.parametrize("name", TRACED)
def test_the_traced_run_is_the_plain_run(name: str, tmp_path: Path) -> None:
    script = SCRIPTS / "harmless" / f"{name}.py"
    plain = python(str(script), str(tmp_path / "plain.pt"), cwd=tmp_path)
    assert plain.returncode == 0, plain.stderr
    traced = torchdoctor_trace("--fail-on", "never", "--skip", "1", "--steps", "3", str(script), str(tmp_path / "observed.pt"),
                               cwd=tmp_path, timeout=400)
    assert traced.returncode == plain.returncode, traced.stderr
    assert traced.report["trace"]["traced"] >= 1
    assert traced.stdout.replace("observed.pt", "plain.pt") == plain.stdout
    assert warnings_of(traced.stderr) == warnings_of(plain.stderr)
    files = sorted(path.name.replace("plain.pt", "") for path in tmp_path.glob("plain.pt*"))
    for suffix in files:
        expected, got = saved(tmp_path / f"plain.pt{suffix}"), saved(tmp_path / f"observed.pt{suffix}")
        assert expected.keys() == got.keys(), suffix
        different = [key for key in expected if not same_bits(expected[key], got[key])]
        assert not different, f"tracing changed {different} in plain.pt{suffix}"
