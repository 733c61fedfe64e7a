"""TD112's two messages: a clip before backward() and a clip after the optimizer step that has
already applied the unclipped gradients (the lines are tested by fixtures/clip_after_step.py)."""

from __future__ import annotations

from tests.lint.conftest import FIXTURES, lint_file


def test_a_clip_after_the_step_names_the_step_that_used_the_unclipped_gradients() -> None:
    path = FIXTURES / "clip_after_step.py"
    lines = path.read_text(encoding="utf-8").splitlines()
    step = next(n for n, line in enumerate(lines, 1) if line.strip() == "optimizer.step()")
    first = min((f for f in lint_file(path) if f.rule == "TD112"), key=lambda f: f.line)
    assert first.line == step + 1
    assert first.message.startswith(f"gradients are clipped after `optimizer.step()` (line {step}) has applied them")


def test_a_clip_before_backward_keeps_its_own_message() -> None:
    found = [f for f in lint_file(FIXTURES / "training_step.py") if f.rule == "TD112"]
    assert found and all(f.message.startswith("gradients are clipped before backward() computes them") for f in found)
