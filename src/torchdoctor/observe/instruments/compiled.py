"""torch.compile's regions run without torchdoctor in them.

Dynamo traces whatever is active when a compiled region runs: module-global hooks (it then
guards on their number, recompiles when it changes, and warns "Using `torch.compile(module)`
when there are global hooks on modules" on the user's stderr) and TorchFunctionModes (it
traces their `__torch_function__`, and fails on `sys._getframe`). So the region is entered
with torchdoctor's hooks and modes set aside, and put back when it returns: dynamo sees the
process exactly as without torchdoctor, and the graphs, guards and numerics are the same.
A compiled module is observed at its boundary instead, as one call of the module (its inputs
and output), which is what the per-step detectors need of a model.

`torch.compile` gets a stand-in that keeps what it returns, except that a compiled function
(`@torch.compile`, `module.compile()`) is handed back wrapped so that its calls are entered
the same way; `OptimizedModule.__call__` (what `torch.compile(module)` returns) gets a
stand-in on first use. Importing torch._dynamo is left to the user's own first compile.
"""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from types import CodeType
from typing import Any

import torch
from torch import nn

from torchdoctor.core.locate import caller_in_user_code
from torchdoctor.observe.faults import own_codes, passes_through
from torchdoctor.observe.patching import Patches

#: the session's: a context in which none of torchdoctor's hooks or modes are active
Outside = Callable[[], AbstractContextManager[None]]
#: the session's: a compiled module is called (module, args) / returned (module, args, kwargs, output)
Before = Callable[[nn.Module, tuple[Any, ...]], None]
After = Callable[[nn.Module, tuple[Any, ...], dict[str, Any], Any, float], None]


def traced() -> bool:
    """torch.compile or torch.jit.trace is recording the user's code right now: an observer
    steps aside (anything it did would be recorded into the user's graph, or warned about)."""
    return torch.compiler.is_compiling() or torch._C._is_tracing()


def eager(module: nn.Module) -> nn.Module:
    """The module a `torch.compile(module)` wraps (itself otherwise): for replays that must see
    every op eagerly, and must not compile anything."""
    inner = getattr(module, "_orig_mod", None) if type(module).__name__ == "OptimizedModule" else None
    return inner if isinstance(inner, nn.Module) else module


class CompileBoundary:
    """Sets torchdoctor aside while compiled code runs (see the module's doc)."""

    def __init__(self, outside: Outside, before: Before, after: After, loaded: Callable[[], None] | None = None) -> None:
        self._outside = outside
        self._before = before
        self._after = after
        self._loaded = loaded  # told once torch._dynamo is imported (the user's first compile)
        self._patches: Patches | None = None
        self._module_patched = False
        self._skipped: set[CodeType] = set()
        self._boundary_codes: set[CodeType] = set()

    def install(self, patches: Patches) -> None:
        self._patches = patches
        original = torch.compile
        boundary = self

        @functools.wraps(original)
        def compile(*args: Any, **kwargs: Any) -> Any:  # noqa: A001 - torch.compile's own name
            compiled = original(*args, **kwargs)
            boundary._patch_optimized_module()
            boundary._skip_own_frames()
            if isinstance(compiled, nn.Module) or not callable(compiled) or (not args and kwargs.get("model") is None):
                return compiled  # a module (its __call__ is patched), or the decorator factory
            return boundary._entered_outside(compiled)

        patches.set(torch, "compile", compile)
        if "torch._dynamo.eval_frame" in sys.modules:  # something compiled before observation started
            self._patch_optimized_module()
            self._skip_own_frames()

    def _entered_outside(self, compiled: Callable[..., Any]) -> Callable[..., Any]:
        outside = self._outside

        @passes_through
        def run_compiled(*args: Any, **kwargs: Any) -> Any:
            if traced():  # called from another compiled region: dynamo's own business
                return compiled(*args, **kwargs)
            with outside():
                return compiled(*args, **kwargs)

        return functools.update_wrapper(run_compiled, compiled)

    def _skip_own_frames(self) -> None:
        """Dynamo compiles any Python frame that starts while a compiled region runs eagerly
        (inside a frame it skips, such as a torch module's `_call_impl`, or after a graph
        break): a stand-in of ours in place of a torch function would be compiled as a frame
        of its own where torch's function is not. Tell dynamo to run them, and what they call,
        as it runs torch's own (when it traces through one instead, it inlines it as before:
        `skip()` makes it call the original)."""
        try:
            from torch._dynamo.eval_frame import set_code_exec_strategy
            from torch._dynamo.types import FrameAction, FrameExecStrategy
        except ImportError:  # an older torch: without this, such frames compile on their own
            return
        boundary = {self._entered_outside(len).__code__, *self._boundary_codes}
        for code in own_codes() - boundary - self._skipped:
            set_code_exec_strategy(code, FrameExecStrategy(FrameAction.SKIP, FrameAction.SKIP))
            self._skipped.add(code)

    def _patch_optimized_module(self) -> None:
        if self._module_patched or self._patches is None:
            return
        self._module_patched = True
        from torch._dynamo.eval_frame import OptimizedModule

        if self._loaded is not None:
            self._loaded()
        original = OptimizedModule.__call__
        outside, before, after = self._outside, self._before, self._after

        @passes_through
        def __call__(self: OptimizedModule, *args: Any, **kwargs: Any) -> Any:
            if torch.compiler.is_compiling():
                return original(self, *args, **kwargs)
            before(self, args)
            started = time.perf_counter()
            with outside():
                result = original(self, *args, **kwargs)
            after(self, args, kwargs, result, time.perf_counter() - started)
            return result

        functools.update_wrapper(__call__, original)
        self._boundary_codes.add(__call__.__code__)
        self._patches.set(OptimizedModule, "__call__", __call__)


#: compilations whose call site is kept (a run that recompiles more has its cause by then)
KEPT_SITES = 512


class CompileSites:
    """The user's line that led to each compilation (the call that compiled), by dynamo's
    compile id ("0/3"). A start callback in dynamo's own callback handler, which dynamo runs
    when it starts compiling a frame: nothing runs on a call that compiles nothing, and dynamo
    reads nothing of it (its guards, graphs and counters are the same). Attached once dynamo is
    imported (`attach`, from the compile boundary); an on-demand instrument (`ctx.instrument`)."""

    def __init__(self) -> None:
        self.sites: dict[str, tuple[str, int] | None] = {}
        self._patches: Patches | None = None
        self._attached = False

    def install(self, patches: Patches) -> None:
        self._patches = patches
        self.attach()

    def attach(self) -> None:
        if self._attached or self._patches is None or "torch._dynamo.callback" not in sys.modules:
            return
        from torch._dynamo.callback import callback_handler

        self._attached = True
        callback_handler.register_start_callback(self._started)
        self._patches.hold(_Removal(self._detach))

    def found(self) -> dict[str, tuple[str, int] | None]:
        """The call sites by compile id; none after a `torch._dynamo.reset()`, which drops the
        callback and starts the compile ids over (the sites kept could be another frame's)."""
        return self.sites if self._registered() else {}

    def _registered(self) -> bool:
        callback = sys.modules.get("torch._dynamo.callback")
        return self._attached and callback is not None and self._started in callback.callback_handler.start_callbacks

    def _detach(self) -> None:
        if self._registered():
            sys.modules["torch._dynamo.callback"].callback_handler.remove_start_callback(self._started)

    def _started(self, args: Any) -> None:
        if len(self.sites) < KEPT_SITES:
            self.sites[str(args.compile_id)] = caller_in_user_code(2)


class _Removal:
    def __init__(self, remove: Callable[[], None]) -> None:
        self.remove = remove
