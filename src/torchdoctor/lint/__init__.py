"""`torchdoctor.lint(paths, *, select, ignore, exclude, config, respect_gitignore) -> Report`

The static checks from Python, as `torchdoctor lint` runs them (nothing is imported or run, and
torch need not be installed); see `lint` under FUNCTIONS for the options.
"""

# The package's design, for those who work on it (help() shows the function above instead):
# `runner` finds the files (`files`: folders walked, gitignore-style excludes), reads them
# (`source`), and hands each to the `engine`: one `ast.parse`, one walk (`context`) that resolves
# names through imports (`names`), follows what values are (`flow`: models, losses, optimizers,
# loaders, probabilities), records the calls of each function in order (`model.Event`, read
# through `steps`), and calls the registered checks (`checks/`) by node type. Fixes are data
# (`fixes`), applied only when the result still parses. The package never imports torch.
# Writing a rule: see docs/lint-rules-dev.md; the API is `torchdoctor.lint.api`
# (`@check(codes, on, names=..., tracks=..., needs_torch=...)`, `Context`, `Kind`, `Event`).
#
# `torchdoctor.lint(paths)` calls this package: the package is callable (the function is
# `python_api.lint`), because a function named `lint` on `torchdoctor` would hide the package
# from `import torchdoctor.lint.x as y`; a module is what help() documents, so the module's
# docstring and `__all__` point it at the function.
from __future__ import annotations

import sys
import types
from typing import Any

from torchdoctor.lint.python_api import lint

__all__ = ["lint"]


class _Callable(types.ModuleType):
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return lint(*args, **kwargs)


sys.modules[__name__].__class__ = _Callable
