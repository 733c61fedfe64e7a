"""Which modules run, which of them are models (top-level calls), and what everything is called.

torchdoctor observes modules only through PyTorch's module-global forward hooks, never through
hooks on the user's modules: a per-module hook lives in the module's `__dict__`, so it would
travel with `torch.save(model)`, `copy.deepcopy`, `pickle` and `torch.jit.script`, and show
in the hook counts that libraries inspect. The global hooks are on while the session observes
closely (warm-up) and, after it, only while a detector watches particular modules
(`watch()`): a Python call per module call is cheap but not free.
What was learnt (the models, the modules that ran and in which grad mode) stays available to
the detectors for the whole run.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.nn.modules import module as module_hooks

from torchdoctor.core.locate import caller_in_user_code
from torchdoctor.observe.events import Location, ModuleCall
from torchdoctor.observe.faults import contain
from torchdoctor.observe.instruments.compiled import traced

#: wrappers whose parameter names start with this prefix, which users do not write
WRAPPER_PREFIXES = ("module.", "_orig_mod.", "_fsdp_wrapped_module.")


#: `watch()` callbacks: (module, args, kwargs, output) after the module's forward returned
WatchCallback = Callable[[nn.Module, tuple[Any, ...], dict[str, Any], Any], None]


@dataclass
class ModuleUse:
    """How a module was called while the hooks were on."""

    grad_calls: int = 0
    no_grad_calls: int = 0


class ModuleIndex:
    """Models seen (root modules, with where they were first called), modules that ran, names."""

    def __init__(self, on_call: Callable[[ModuleCall], None] | None, on_root: Callable[[], None]) -> None:
        self.roots: weakref.WeakKeyDictionary[nn.Module, Location | None] = weakref.WeakKeyDictionary()
        self.ran: weakref.WeakKeyDictionary[nn.Module, ModuleUse] = weakref.WeakKeyDictionary()
        self.on_call = on_call
        self._on_root = on_root
        self._local = threading.local()
        self._closely = False
        self._handles: list[Any] = []
        self._watches: dict[int, list[Watch]] = {}
        self._recorders: list[SpanRecorder] = []
        self._contained_pre = contain("the module observer", self._pre)
        self._contained_post = contain("the module observer", self._post)
        self._hidden = 0
        self._names: weakref.WeakKeyDictionary[nn.Module, str] = weakref.WeakKeyDictionary()
        self._param_names: dict[int, tuple[weakref.ref[Any], str]] = {}

    @property
    def active(self) -> bool:
        """Observing every module call closely (warm-up)."""
        return self._closely

    def start(self) -> None:
        self._closely = True
        self._sync()

    def stop(self) -> None:
        """Stop observing closely; watched modules stay watched."""
        self._closely = False
        self._sync()

    def close(self) -> None:
        """Remove every hook (the session ends)."""
        self._closely = False
        self._watches.clear()
        self._sync()

    def watch(self, module: nn.Module, callback: WatchCallback) -> Watch:
        """Call `callback(module, args, kwargs, output)` after each forward of `module` until the
        returned handle's `remove()`; nothing is attached to the module itself."""
        watch = Watch(self, weakref.ref(module, self._forget), callback)
        self._watches.setdefault(id(module), []).append(watch)
        self._sync()
        return watch

    def record_spans(self) -> SpanRecorder:
        """Note, until the recorder's `stop()`, the autograd sequence numbers each module's
        forward spans (the nodes it created), through the global hooks while they are on (the
        warm-up): the memory account names the module that saved each activation with it. It
        never turns the hooks on by itself."""
        recorder = SpanRecorder(self)
        self._recorders.append(recorder)
        return recorder

    def _stop_recording(self, recorder: SpanRecorder) -> None:
        if recorder in self._recorders:
            self._recorders.remove(recorder)

    def _unwatch(self, watch: Watch) -> None:
        for key, watches in list(self._watches.items()):
            if watch in watches:
                watches.remove(watch)
                if not watches:
                    del self._watches[key]
        self._sync()

    def _forget(self, ref: weakref.ref[nn.Module]) -> None:
        """A watched module was collected: drop its watches (its id may be reused)."""
        for key, watches in list(self._watches.items()):
            self._watches[key] = [w for w in watches if w.module is not ref]
            if not self._watches[key]:
                del self._watches[key]
        self._sync()

    @contextmanager
    def hidden(self) -> Iterator[None]:
        """No global hook of ours while the block runs (compiled code: see instruments/compiled.py)."""
        self._hidden += 1
        self._remove_handles()
        try:
            yield
        finally:
            self._hidden -= 1
            self._sync()

    def compiled_call(self, module: nn.Module, args: tuple[Any, ...]) -> None:
        """A compiled module is called (its hooks are hidden): observe it as the hooks would."""
        if self._closely:
            self._contained_pre(module, args)

    def compiled_return(self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], output: Any) -> None:
        if self._closely or self._watches:
            self._contained_post(module, args, kwargs, output)

    def _remove_handles(self) -> None:
        for handle in self._handles:
            handle.remove()
            # torch leaves the id of a hook registered `with_kwargs` in this dict when it is
            # removed, and `torch.compile(module)` then warns about global hooks forever
            module_hooks._global_forward_hooks_with_kwargs.pop(handle.id, None)
        self._handles = []

    def _sync(self) -> None:
        """Global hooks on exactly while something needs them: both in warm-up, the forward
        hook alone for watches (none while hidden)."""
        wanted = 0 if self._hidden else 2 if self._closely else 1 if self._watches else 0
        if len(self._handles) == wanted:
            return
        self._remove_handles()
        if wanted == 2:
            self._handles.append(module_hooks.register_module_forward_pre_hook(self._contained_pre))
        if wanted:
            # not always_call: torch would call it with other arguments, and warn, when forward raises
            self._handles.append(module_hooks.register_module_forward_hook(self._contained_post, with_kwargs=True))

    def _pre(self, module: nn.Module, args: tuple[Any, ...]) -> None:
        if traced():
            return
        for recorder in self._recorders:
            recorder.enter(module, args)
        if not self._closely:
            return
        depth = getattr(self._local, "depth", 0)
        self._local.depth = depth + 1
        use = self.ran.get(module)
        if use is None:
            use = self.ran[module] = ModuleUse()
        if torch.is_grad_enabled():
            use.grad_calls += 1
        else:
            use.no_grad_calls += 1
        if depth == 0:
            if module not in self.roots:
                self.roots[module] = caller_in_user_code()
                self._names.clear()
            self._on_root()

    def _post(self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], output: Any) -> None:
        if traced():
            return
        watches = self._watches.get(id(module))
        if watches is not None:
            for watch in list(watches):
                if watch.module() is module:
                    watch.callback(module, args, kwargs, output)
        for recorder in self._recorders:
            recorder.leave(module)
        if not self._closely:
            return
        depth = getattr(self._local, "depth", 1) - 1
        self._local.depth = max(depth, 0)
        if self.on_call is not None:
            self.on_call(ModuleCall(module, args, kwargs, output, root=depth == 0, grad_enabled=torch.is_grad_enabled()))

    def reset_depth(self) -> None:
        """Between steps no module is running; a forward that raised left the count behind."""
        self._local.depth = 0

    def live_roots(self) -> list[nn.Module]:
        """Top-level models, outermost first: a root inside another root is not listed."""
        roots = list(self.roots.keys())
        inner = {id(child) for root in roots for child in root.modules() if child is not root}
        return [root for root in roots if id(root) not in inner]

    def name_of(self, module: nn.Module) -> str:
        """`fc1`, `encoder.layers.0.attn`; a model itself is named by its class."""
        if not self._names:
            for root in self.live_roots():
                for name, child in root.named_modules():
                    self._names.setdefault(child, _strip(name) or type(root).__name__)
        return self._names.get(module) or type(module).__name__

    def param_name(self, param: torch.Tensor) -> str | None:
        """The parameter's qualified name in its model, when it belongs to a known model."""
        entry = self._param_names.get(id(param))
        if entry is None or entry[0]() is not param:
            self._param_names = {
                id(p): (weakref.ref(p), _strip(name)) for root in self.live_roots() for name, p in root.named_parameters()
            }
            entry = self._param_names.get(id(param))
        return entry[1] if entry is not None and entry[0]() is param else None

    def owner_of(self, param: torch.Tensor) -> nn.Module | None:
        """The module that holds `param` directly (its `_parameters`)."""
        for root in self.live_roots():
            for module in root.modules():
                if any(p is param for p in module._parameters.values()):
                    return module
        return None


@dataclass(eq=False)
class Span:
    """One module forward: the autograd nodes it created have sequence numbers in
    [start, end) (`end` None while it runs, or when it raised)."""

    module: nn.Module
    start: int
    end: int | None
    depth: int


class SpanRecorder:
    """The spans of the module forwards while it records (`ModuleIndex.record_spans`), and the
    input tensors of the top-level calls (a model's batch)."""

    def __init__(self, index: ModuleIndex) -> None:
        self.spans: list[Span] = []
        self.inputs: list[Any] = []
        self._index = index
        self._open: list[Span] = []

    def enter(self, module: nn.Module, args: tuple[Any, ...]) -> None:
        span = Span(module, _next_sequence(), None, len(self._open))
        self.spans.append(span)
        self._open.append(span)
        if span.depth == 0 and any(True for _ in module.parameters()):  # a model, not a loss module
            self.inputs.extend(args)

    def leave(self, module: nn.Module) -> None:
        while self._open:  # a forward that raised left its span open: close it with this one
            span = self._open.pop()
            span.end = _next_sequence()
            if span.module is module:
                return

    def stop(self) -> None:
        """Stop recording and let go of the batch (the spans stay, to name the modules of a
        graph still alive, e.g. when backward() runs out of memory)."""
        self._index._stop_recording(self)
        self.inputs = []
        self._open = []

    remove = stop  # a handle the session can hold

    def module_at(self, sequence: int) -> nn.Module | None:
        """The innermost module whose forward created the node with this sequence number."""
        found: Span | None = None
        for span in self.spans:
            if span.start > sequence:
                break
            if (span.end is None or sequence < span.end) and (found is None or span.depth >= found.depth):
                found = span
        return found.module if found is not None else None


def _next_sequence() -> int:
    """The sequence number autograd gives the next node this thread creates."""
    return int(torch._C._autograd._get_sequence_nr())


@dataclass(eq=False)
class Watch:
    """One `ModuleIndex.watch()`: a handle with `remove()`, like a hook's."""

    index: ModuleIndex
    module: weakref.ref[nn.Module]
    callback: WatchCallback

    def remove(self) -> None:
        self.index._unwatch(self)


def _strip(name: str) -> str:
    for prefix in WRAPPER_PREFIXES:
        while name.startswith(prefix):
            name = name[len(prefix):]
    return name
