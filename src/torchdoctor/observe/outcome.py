"""How an observed run (or a `watch()` block) ended, for detectors that conclude at the end."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Outcome:
    """`exception` is the uncaught exception (None when the code finished or called sys.exit)."""

    exception: BaseException | None = None

    @classmethod
    def from_exception(cls, exception: BaseException | None) -> Outcome:
        return cls(exception=exception if isinstance(exception, BaseException) else None)

    @property
    def interrupted(self) -> bool:
        return isinstance(self.exception, KeyboardInterrupt)

    @property
    def crashed(self) -> bool:
        """An exception other than Ctrl-C ended the run."""
        return self.exception is not None and not self.interrupted

    @property
    def completed(self) -> bool:
        """The code ran to its end (or exited on purpose): end-of-run verdicts are meaningful."""
        return self.exception is None
