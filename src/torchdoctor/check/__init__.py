"""torchdoctor check: the health check of a model, its data, loss and optimizer.

`torchdoctor.check(model, data, loss_fn=None, optimizer=None, **options)` is the public API.
Once this package is imported, Python binds `torchdoctor.check` to the package itself, so the
package is made callable: calling it calls `torchdoctor.check.api.check` (imported lazily,
because `torchdoctor lint` and `torchdoctor rules` must not import torch).
"""

from __future__ import annotations

import sys
import types
from typing import Any


class _CallablePackage(types.ModuleType):
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from torchdoctor.check.api import check

        return check(*args, **kwargs)


sys.modules[__name__].__class__ = _CallablePackage
