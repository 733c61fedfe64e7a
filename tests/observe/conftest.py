"""The run tests' `write` fixture, for the engine's tests that end with a real `torchdoctor run`."""

from tests.run.conftest import write

__all__ = ["write"]
