"""Reversible interventions: attribute stand-ins and hook handles, all undone in reverse order.

Every change torchdoctor makes to torch while it observes is recorded here, so that
`watch()` leaves the process exactly as it found it (the anomaly_mode pattern: every
intervention is a handle that puts things back).
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from types import CodeType, FrameType
from typing import Any, Protocol

from torchdoctor.observe.faults import FAULTS, passes_through

_MISSING = object()


class Removable(Protocol):
    def remove(self) -> None: ...


class Patches:
    """Attribute replacements and hook handles that can all be undone."""

    def __init__(self) -> None:
        self._undo: list[Callable[[], None]] = []

    def set(self, owner: Any, name: str, value: Any) -> None:
        """`setattr(owner, name, value)`, remembering whether `owner` itself had the attribute."""
        old = vars(owner).get(name, _MISSING)
        setattr(owner, name, value)

        def undo() -> None:
            if old is _MISSING:
                delattr(owner, name)
            else:
                setattr(owner, name, old)

        self._undo.append(undo)

    def hold(self, handle: Removable) -> None:
        self._undo.append(handle.remove)

    def undo(self) -> None:
        while self._undo:
            self._undo.pop()()


def observed(
    original: Callable[..., Any],
    before: Callable[[tuple[Any, ...], dict[str, Any]], None] | None,
    after: Callable[[], None] | None = None,
    *,
    skip: Callable[[], bool] = lambda: False,
    returned: Callable[[tuple[Any, ...], dict[str, Any], Any], None] | None = None,
) -> Callable[..., Any]:
    """A stand-in for `original` that calls `before(args, kwargs)` (and `after()`) around it,
    and `returned(args, kwargs, result)` when it returns.

    The observation callbacks never change the arguments or the result; when `skip()` is true
    (e.g. while torch.compile traces) the original is called directly. The stand-in keeps the
    original's name, docstring, `__wrapped__` and, for Python functions, its module globals:
    TorchScript then compiles the original's source unchanged (it follows `__wrapped__` and
    resolves names through the function's globals).
    """

    make_caller, frame_of, faults = as_caller, sys._getframe, FAULTS  # closure cells: the globals may be torch's
    where = f"the stand-in for {getattr(original, '__qualname__', original)}"

    def stand_in(*args: Any, **kwargs: Any) -> Any:
        if skip():
            return original(*args, **kwargs)
        if before is not None:
            try:
                before(args, kwargs)
            except Exception as exc:  # noqa: BLE001 - observing must never change what the call does
                faults.add(where, exc)
        try:
            call = make_caller(frame_of(1))
        except Exception as exc:  # noqa: BLE001 - same as above: the user's call goes on unobserved
            faults.add(where, exc)
            call = _call
        if after is None and returned is None:
            return call(original, args, kwargs)
        try:
            result = call(original, args, kwargs)
            if returned is not None:
                try:
                    returned(args, kwargs, result)
                except Exception as exc:  # noqa: BLE001 - same as above
                    faults.add(where, exc)
            return result
        finally:
            if after is not None:
                try:
                    after()
                except Exception as exc:  # noqa: BLE001 - same as above
                    faults.add(where, exc)

    passes_through(stand_in)
    globals_ = getattr(original, "__globals__", None)
    if isinstance(globals_, dict):
        stand_in = types.FunctionType(
            stand_in.__code__, globals_, getattr(original, "__name__", "stand_in"), None, stand_in.__closure__
        )
    for attribute in ("__module__", "__name__", "__qualname__", "__doc__"):
        try:
            setattr(stand_in, attribute, getattr(original, attribute))
        except (AttributeError, TypeError):
            pass
    stand_in.__wrapped__ = original  # type: ignore[attr-defined]
    stand_in.__torchdoctor_original__ = original  # type: ignore[attr-defined]
    return stand_in


def observed_init(original: Callable[..., None], created: Callable[[Any], None]) -> Callable[..., None]:
    """A stand-in for a class's `__init__` that calls `created(self)` once the object is built
    (a failure in `created` never breaks the construction)."""

    where = f"the stand-in for {original.__qualname__}"

    @passes_through
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        try:
            created(self)
        except Exception as exc:  # noqa: BLE001 - observing must never break construction
            FAULTS.add(where, exc)

    __init__.__wrapped__ = original  # type: ignore[attr-defined]
    __init__.__doc__ = original.__doc__
    __init__.__qualname__ = original.__qualname__
    return __init__


def _call(function: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any: return function(*args, **kwargs)  # noqa: E704


_CALLERS: dict[tuple[int, str, int], Callable[..., Any]] = {}
_CALLER_CODES: set[CodeType] = set()


def is_stand_in_frame(code: CodeType) -> bool:
    """True for the frames `as_caller` makes: they look like the user's line but hold none of
    its variables (crash explanations skip them)."""
    return code in _CALLER_CODES


def as_caller(frame: FrameType) -> Callable[..., Any]:
    """A function that calls `function(*args, **kwargs)` from a frame that looks like `frame`:
    same file, line and module globals.

    PyTorch warns with `stacklevel=2` ("Using a target size ... different to the input size"),
    which names the caller of the function that warns. Calling the original through this
    makes that caller the user's line again (as without torchdoctor) instead of the stand-in,
    and keeps Python's show-once-per-line bookkeeping in the caller's module. One function per
    call site, cached.
    """
    key = (id(frame.f_globals), frame.f_code.co_filename, frame.f_lineno)
    caller = _CALLERS.get(key)
    if caller is None:
        code = _call.__code__.replace(co_filename=frame.f_code.co_filename, co_firstlineno=frame.f_lineno, co_name=frame.f_code.co_name)
        caller = _CALLERS[key] = types.FunctionType(code, frame.f_globals)
        _CALLER_CODES.add(code)
    return caller


@passes_through
def call_in_mode(func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Call `func` from a TorchFunctionMode's `__torch_function__` so that warnings name the
    same line as without the mode: the caller of the Python function being handled (F.mse_loss
    re-enters itself through the mode), or the mode's own caller for a builtin."""
    frame = sys._getframe(2)  # the caller of __torch_function__
    code = getattr(func, "__code__", None)
    if code is not None:
        probe: FrameType | None = frame
        while probe is not None and probe.f_code is not code:
            probe = probe.f_back
        if probe is not None and probe.f_back is not None:
            frame = probe.f_back
    return as_caller(frame)(func, args, kwargs)
