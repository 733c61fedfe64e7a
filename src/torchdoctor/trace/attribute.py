"""From the profiler's events of the traced steps to time per user line.

The traced process wraps every torch call made from the user's code in a profiler range named
after the user's line (trace/marks.py). Here the events are nested per thread by time, and
each event's self time (its duration less its children's) goes to one place:

- inside `autograd::engine::evaluate_function: XBackward0` with a sequence number: the
  backward of the forward op that created that node, i.e. the line that ran that op (the
  profiler gives a forward op and its backward node the same sequence number);
- inside a line's range: that line (forward);
- under no range (an optimizer's or a DataLoader's own record function around the torch calls
  it makes): the line of the calls it makes, or, with none, a named remainder.

So every event is counted once, and the lines and the remainder add up to the profiler's
total self time for the traced steps. GPU kernels are joined to the op that launched them by
the profiler's correlation ids.

No torch here: events arrive as plain `Event` objects (trace/events.py builds them), so the
analysis is tested on facts injected by hand (a GPU run included).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from torchdoctor.trace.options import COMPILED_SUFFIX, LINE_PREFIX, OWN, STEP_PREFIX

BACKWARD_PREFIX = "autograd::engine::evaluate_function: "
#: the DataLoader's record function around fetching one batch (`enumerate(DataLoader)#...__next__`)
DATA_PREFIX = "enumerate(DataLoader)#"
#: ... when the batch is made in the training process itself (num_workers=0)
IN_PROCESS_DATA = "enumerate(DataLoader)#_SingleProcessDataLoaderIter"
#: CUDA runtime calls that make the host wait for the device
SYNC_CALLS = frozenset({"cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy"})
#: aten ops that read a device value back to the host
SYNC_OPS = frozenset({"aten::_local_scalar_dense"})
#: profiler dtype names -> torch's
DTYPES = {
    "float": "float32", "double": "float64", "c10::Half": "float16", "c10::BFloat16": "bfloat16",
    "long int": "int64", "int": "int32", "short int": "int16", "signed char": "int8", "unsigned char": "uint8",
    "bool": "bool", "c10::complex<float>": "complex64", "c10::complex<double>": "complex128",
}
TOP_OPS = 6
#: ops that move, view, allocate or convert data rather than compute on it
#: ATen's generic fallback kernels, taken where the fast library kernel (oneDNN, cuDNN, a fused
#: attention kernel) was disabled or does not take the call: op -> what it stands in for
SLOW_PATHS = {
    "aten::thnn_conv2d": "convolution", "aten::_slow_conv2d_forward": "convolution",
    "aten::_slow_conv2d_backward": "convolution", "aten::slow_conv3d": "convolution",
    "aten::slow_conv3d_forward": "convolution", "aten::slow_conv_dilated2d": "convolution",
    "aten::slow_conv_dilated3d": "convolution", "aten::slow_conv_transpose2d": "convolution",
    "aten::slow_conv_transpose3d": "convolution",
    "aten::_scaled_dot_product_attention_math": "attention",
}
NON_COMPUTE = frozenset({
    "aten::to", "aten::_to_copy", "aten::copy_", "aten::empty", "aten::empty_like", "aten::empty_strided",
    "aten::view", "aten::_reshape_alias", "aten::reshape", "aten::as_strided", "aten::t", "aten::transpose",
    "aten::permute", "aten::expand", "aten::slice", "aten::select", "aten::unsqueeze", "aten::squeeze",
    "aten::detach", "aten::alias", "aten::lift_fresh", "aten::resolve_conj", "aten::resolve_neg",
    "aten::_local_scalar_dense", "aten::item", "aten::contiguous", "aten::clone", "aten::zeros", "aten::ones",
    "aten::zero_", "aten::fill_", "aten::stack", "aten::cat", "aten::unbind", "aten::split", "aten::chunk",
})


class Event:
    """One profiler event, as plain values (times in ns)."""

    __slots__ = ("name", "thread", "start", "end", "seq", "fwd_thread", "corr", "linked", "device",
                 "shapes", "dtypes", "strides", "parent", "self_ns", "children")

    def __init__(self, name: str, thread: int, start: int, end: int, *, seq: int = -1, fwd_thread: int = 0,
                 corr: int = 0, linked: int = 0, device: str = "cpu", shapes: list[Any] | None = None,
                 dtypes: list[str] | None = None, strides: list[Any] | None = None) -> None:
        self.name, self.thread, self.start, self.end = name, thread, start, max(end, start)
        self.seq, self.fwd_thread, self.corr, self.linked, self.device = seq, fwd_thread, corr, linked, device
        self.shapes, self.dtypes, self.strides = shapes or [], dtypes or [], strides or []
        self.parent: Event | None = None
        self.self_ns = self.end - self.start
        self.children = 0

    @property
    def duration(self) -> int:
        return self.end - self.start

    @property
    def is_op(self) -> bool:
        return self.name.startswith("aten::")

    @property
    def is_line(self) -> bool:
        return self.name.startswith(LINE_PREFIX)

    def __repr__(self) -> str:
        return f"Event({self.name!r}, {self.start}-{self.end})"


@dataclass
class LineFacts:
    """What the marks saw of a line's torch calls (a few sampled calls)."""

    file: str
    line: int
    source: str = ""
    devices: set[str] = field(default_factory=set)
    autocast: set[str] = field(default_factory=set)  # device types whose autocast was on
    keys: list[list[str]] = field(default_factory=list)  # dispatch key sets of sampled calls
    calls: int = 0
    sampled: int = 0  # calls with tensors whose facts were read


@dataclass
class OpStats:
    count: int = 0
    ns: int = 0
    direct: int = 0  # calls made by the line itself (not inside another op)
    shapes: Counter[str] = field(default_factory=Counter)
    dtypes: set[str] = field(default_factory=set)
    copies_from_strided: int = 0  # copies whose source is not contiguous
    copies_from_strided_ns: int = 0
    signature: list[str] = field(default_factory=list)  # the profiler's input kinds of a direct call


@dataclass
class LineStats:
    key: str  # the range name (`line train.py:42`, maybe with the compiled suffix)
    forward_ns: int = 0
    backward_ns: int = 0
    calls: int = 0
    ops: dict[str, OpStats] = field(default_factory=lambda: defaultdict(OpStats))
    backward_ops: dict[str, OpStats] = field(default_factory=lambda: defaultdict(OpStats))
    nodes: Counter[str] = field(default_factory=Counter)
    device_ns: int = 0
    kernels: int = 0
    syncs: int = 0
    per_step_ns: Counter[int] = field(default_factory=Counter)
    syncs_per_step: Counter[int] = field(default_factory=Counter)
    #: per step: compute ops (or their backward) in float64; copies gathering strided sources
    float64_per_step: Counter[int] = field(default_factory=Counter)
    strided_per_step: Counter[int] = field(default_factory=Counter)
    float64_device_per_step: Counter[int] = field(default_factory=Counter)  # their kernels, on a GPU
    #: per step: time inside a fallback kernel (SLOW_PATHS), whole; and those kernels, by name
    slow_per_step: Counter[int] = field(default_factory=Counter)
    slow_paths: Counter[str] = field(default_factory=Counter)

    @property
    def total_ns(self) -> int:
        return self.forward_ns + self.backward_ns


@dataclass
class StepStats:
    index: int
    start: int
    end: int
    op_ns: int = 0  # self time of every CPU event that started in the step, torchdoctor's own aside
    data_ns: int = 0  # time in the DataLoader fetching batches
    data_in_process_ns: int = 0  # ... made in the training process (no worker processes)
    device_ns: int = 0  # time some kernel ran (union of kernel intervals)
    kernels: int = 0
    small_kernels: int = 0  # kernels shorter than SMALL_KERNEL_NS


@dataclass
class Attribution:
    lines: dict[str, LineStats]
    steps: list[StepStats]
    remainder: Counter[str]  # self time under no user line, by the outermost event's name
    total_ns: int  # the profiler's total self time over the traced steps
    window: tuple[int, int]
    places: dict[int, tuple[str | None, bool]] = field(default_factory=dict)  # id(event) -> (line, backward)
    #: the lines where the DataLoader's fetches spent their time, the one to look at first
    data_lines: list[str] = field(default_factory=list)


#: a kernel this short is dominated by its launch cost (a few microseconds)
SMALL_KERNEL_NS = 10_000


def attribute(events: list[Event], data_line: str | None = None) -> Attribution:
    """Nest, attribute and total the events (see the module's doc). `data_line` is the line that
    iterates the DataLoader: a fetch under no line of its own (the batch came from worker
    processes) is its wait."""
    host = sorted((e for e in events if e.device == "cpu"), key=lambda e: (e.thread, e.start, -e.end))
    device = [e for e in events if e.device != "cpu"]
    marks = sorted(e.start for e in host if e.name.startswith(STEP_PREFIX))
    _nest(host)
    window = (marks[0], marks[-1]) if len(marks) >= 2 else (min((e.start for e in host), default=0), max((e.end for e in host), default=0))
    steps = [StepStats(i + 1, a, b) for i, (a, b) in enumerate(zip(marks, marks[1:]))] or [StepStats(1, *window)]
    lines: dict[str, LineStats] = {}
    remainder: Counter[str] = Counter()
    forward_line: dict[tuple[int, int], str] = {}
    placed: dict[int, tuple[str | None, bool]] = {}  # id(event) -> (line key, backward)
    orphans: dict[int, list[Event]] = defaultdict(list)  # id(root) -> events under no line
    under_root: dict[int, Counter[str]] = defaultdict(Counter)  # id(root) -> time of each line below it
    by_corr: dict[int, Event] = {}
    total = 0
    for event in sorted(host, key=lambda e: e.start):
        if event.name.startswith(STEP_PREFIX):
            continue
        total += event.self_ns
        if event.corr:
            by_corr[event.corr] = event
        key, backward = _place(event, forward_line, placed)
        if key == OWN:
            remainder[OWN] += event.self_ns
            continue
        if key is None:
            orphans[id(_root(event))].append(event)
            continue
        if not backward and event.seq >= 0:
            # ops record the autograd sequence number they find; the one that creates a node
            # takes it and moves it on, so the last op with a number is that node's forward op
            forward_line[(event.thread, event.seq)] = key
        _count(lines, key, event, backward, steps)
        if not backward:
            under_root[id(_root(event))][key] += event.self_ns
    for root_id, members in orphans.items():
        # an optimizer's step or a DataLoader's batch under no line: its own overhead goes to
        # the line whose torch calls took the most time under it
        busiest = under_root.get(root_id)
        key = busiest.most_common(1)[0][0] if busiest else None
        root = _root(members[0])
        if key is None and data_line is not None and root.name.startswith(DATA_PREFIX):
            key = data_line
        if key is None:
            for event in members:
                remainder[root.name] += event.self_ns
            continue
        for event in members:
            placed[id(event)] = (key, False)
            _count(lines, key, event, False, steps)
    fetches = [e for e in host if e.name.startswith(DATA_PREFIX) and e.parent is None]
    work: Counter[str] = Counter()  # the lines whose torch calls ran inside the fetches (a dataset's code)
    own: Counter[str] = Counter()  # the fetches' own time (indexing, collate), at the line that asked for the batch
    for fetch in fetches:
        work.update(under_root.get(id(fetch), Counter()))
        key = placed.get(id(fetch), (None, False))[0]
        if key is not None:
            own[key] += fetch.self_ns
    data_lines = ordered_data_lines(work, own)
    for step in steps:
        step.op_ns = sum(e.self_ns for e in host if step.start <= e.start < step.end and not e.name.startswith(STEP_PREFIX)
                         and placed.get(id(e), (None, False))[0] != OWN)
        step.data_ns = sum(e.duration for e in fetches if step.start <= e.start < step.end)
        step.data_in_process_ns = sum(e.duration for e in fetches if step.start <= e.start < step.end and e.name.startswith(IN_PROCESS_DATA))
    _join_device(device, host, by_corr, placed, lines, steps)
    return Attribution(lines=lines, steps=steps, remainder=remainder, total_ns=total, window=window, places=placed,
                       data_lines=data_lines)


#: a dataset's own torch work is named first when it takes this share of the fetches' own time
#: at least (the two shift with the machine's load: a dataset line that does real work stays first)
DATA_WORK_FIRST = 1 / 3


def ordered_data_lines(work: Counter[str], own: Counter[str]) -> list[str]:
    """The lines where batches took their time: the dataset's lines with torch work first when
    they do a real part of it (the fix lies there), else the line that iterates the loader."""
    first, then = (work, own) if sum(work.values()) >= DATA_WORK_FIRST * sum(own.values()) else (own, work)
    ordered = [key for key, _ in first.most_common()]
    return ordered + [key for key, _ in then.most_common() if key not in ordered]


def _nest(events: list[Event]) -> None:
    """Parents by time containment on each thread, and self times (events sorted by thread,
    start, longest first)."""
    stack: list[Event] = []
    thread = None
    for event in events:
        if event.thread != thread:
            stack, thread = [], event.thread
        while stack and not (event.start >= stack[-1].start and event.end <= stack[-1].end):
            stack.pop()
        if stack:
            parent = stack[-1]
            event.parent = parent
            parent.self_ns -= event.duration
            parent.children += 1
        stack.append(event)
    for event in events:
        event.self_ns = max(event.self_ns, 0)


def _root(event: Event) -> Event:
    while event.parent is not None:
        event = event.parent
    return event


def _place(event: Event, forward_line: dict[tuple[int, int], str], placed: dict[int, tuple[str | None, bool]]) -> tuple[str | None, bool]:
    """(line key, whether in the backward pass) for one event, from its nearest ancestor that
    is a line's range or a backward node of a known forward op."""
    chain: list[Event] = []
    probe: Event | None = event
    found: tuple[str | None, bool] = (None, False)
    while probe is not None:
        known = placed.get(id(probe))
        if known is not None:
            found = known
            break
        chain.append(probe)
        if probe.name.startswith(BACKWARD_PREFIX) and probe.seq >= 0:
            line = forward_line.get((probe.fwd_thread, probe.seq))
            if line is not None:
                found = (line, True)
                break
        if probe.is_line or probe.name == OWN:  # (torchdoctor's own calls: never a user line's)
            found = (probe.name, False)
            break
        probe = probe.parent
    for member in chain:
        placed[id(member)] = found
    return found


def _count(lines: dict[str, LineStats], key: str, event: Event, backward: bool, steps: list[StepStats]) -> None:
    stats = lines.get(key)
    if stats is None:
        stats = lines[key] = LineStats(key)
    if backward:
        stats.backward_ns += event.self_ns
    else:
        stats.forward_ns += event.self_ns
    step = _step_of(event.start, steps)
    if step is not None:
        stats.per_step_ns[step] += event.self_ns
    if event.is_line and not backward:
        stats.calls += 1
    if event.name.startswith(BACKWARD_PREFIX):
        stats.nodes[event.name[len(BACKWARD_PREFIX):]] += 1
    if event.name in SYNC_OPS:
        stats.syncs += 1
        if step is not None:
            stats.syncs_per_step[step] += 1
    if not event.is_op:
        return
    table = stats.backward_ops if backward else stats.ops
    op = table[event.name]
    op.count += 1
    op.ns += event.self_ns
    if event.parent is not None and event.parent.is_line:
        op.direct += 1
        if not op.signature:
            op.signature = list(event.dtypes)
    if len(op.shapes) < 8 or _shape_text(event.shapes) in op.shapes:
        op.shapes[_shape_text(event.shapes)] += 1
    op.dtypes.update(DTYPES.get(d, d) for d in event.dtypes if d and d not in ("Scalar", "ScalarList"))
    if _copies_from_strided(event):
        op.copies_from_strided += 1
        op.copies_from_strided_ns += event.self_ns
        if step is not None:
            stats.strided_per_step[step] += event.self_ns
    if step is not None and _float64_compute(event):
        stats.float64_per_step[step] += event.self_ns
    if event.name in SLOW_PATHS and "double" not in event.dtypes and not _inside_slow_path(event):
        # whole (its im2col and matrix products are the slow path's cost); a float64 one is TD471's
        stats.slow_paths[event.name] += 1
        if step is not None:
            stats.slow_per_step[step] += event.duration


def _inside_slow_path(event: Event) -> bool:
    parent = event.parent
    while parent is not None:
        if parent.name in SLOW_PATHS:
            return True
        parent = parent.parent
    return False


def _float64_compute(event: Event) -> bool:
    """A compute op with a float64 tensor operand. A Python number in a float32 op (Adam's
    bias corrections, `x / 3.0`) reaches it as a 0-dim float64 tensor: that is no float64 compute."""
    if not event.is_op or event.name in NON_COMPUTE:
        return False
    shapes = list(event.shapes) + [None] * (len(event.dtypes) - len(event.shapes))
    return any(dtype == "double" and shape != [] for dtype, shape in zip(event.dtypes, shapes))


def _step_of(start: int, steps: list[StepStats]) -> int | None:
    for step in steps:
        if step.start <= start < step.end:
            return step.index
    return None


def _shape_text(shapes: list[Any]) -> str:
    parts = []
    for shape in shapes:
        if isinstance(shape, list) and shape:
            parts.append("x".join(str(d) for d in shape))
    return ", ".join(parts)


def contiguous_strides(shape: list[int]) -> list[int]:
    strides, running = [], 1
    for size in reversed(shape):
        strides.append(running)
        running *= max(size, 1)
    return list(reversed(strides))


def _direct_call(event: Event) -> Event | None:
    """The op the user's line called that `event` runs inside (itself when the line called it)."""
    while event.parent is not None and not event.parent.is_line:
        event = event.parent
    return event if event.parent is not None else None


def _copies_from_strided(event: Event) -> bool:
    """`aten::copy_(dst, src)` whose source is not laid out contiguously (a transpose, permute
    or slice materialised): element-by-element gathering instead of one block copy. Only the
    copies of a call that moves data (`.contiguous()`, `.reshape()`, `.clone()`, `.to()`, `cat`...):
    those inside a computing op (`stft` framing its input, a matmul packing an operand) are how
    that op works, not a layout the user chose."""
    if event.name != "aten::copy_" or len(event.shapes) < 2 or len(event.strides) < 2:
        return False
    direct = _direct_call(event)
    if direct is not None and direct.name not in NON_COMPUTE:
        return False
    shape, strides = event.shapes[1], event.strides[1]
    if not isinstance(shape, list) or not isinstance(strides, list) or len(shape) != len(strides) or len(shape) < 2:
        return False
    if any(s == 0 for d, s in zip(shape, strides) if d > 1):
        return False  # a broadcast (an expanded bias): one row read again and again, not a gather
    return [s for d, s in zip(shape, strides) if d > 1] != [s for d, s in zip(shape, contiguous_strides(shape)) if d > 1]


def _join_device(device: list[Event], host: list[Event], by_corr: dict[int, Event],
                 placed: dict[int, tuple[str | None, bool]], lines: dict[str, LineStats], steps: list[StepStats]) -> None:
    """Kernels and copies on the device: their time goes to the line of the op that launched
    them; CUDA runtime calls that synchronise count as syncs of that line."""
    for event in host:
        if event.name in SYNC_CALLS and event.linked in by_corr and by_corr[event.linked].name not in SYNC_OPS:
            key, _ = placed.get(id(by_corr[event.linked]), (None, False))
            if key is not None:
                stats = lines[key]
                stats.syncs += 1
                step = _step_of(event.start, steps)
                if step is not None:
                    stats.syncs_per_step[step] += 1
    intervals: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for kernel in device:
        step = _step_of(kernel.start, steps)
        launcher = by_corr.get(kernel.linked)
        key = placed.get(id(launcher), (None, False))[0] if launcher is not None else None
        if key is not None:
            lines[key].device_ns += kernel.duration
            lines[key].kernels += 1
            if step is not None and launcher is not None and _float64_compute(launcher):
                lines[key].float64_device_per_step[step] += kernel.duration
        if step is not None:
            intervals[step].append((kernel.start, kernel.end))
            target = steps[step - 1]
            target.kernels += 1
            if kernel.duration < SMALL_KERNEL_NS:
                target.small_kernels += 1
    for traced in steps:
        traced.device_ns = _union(intervals.get(traced.index, []))


def _union(spans: list[tuple[int, int]]) -> int:
    total, end = 0, None
    for start, stop in sorted(spans):
        if end is None or start > end:
            total += stop - start
            end = stop
        elif stop > end:
            total += stop - end
            end = stop
    return total


def line_location(key: str) -> tuple[str, bool]:
    """`line train.py:42 [compiled]` -> ("train.py:42", True)."""
    text = key[len(LINE_PREFIX):]
    compiled = text.endswith(COMPILED_SUFFIX)
    return (text[: -len(COMPILED_SUFFIX)] if compiled else text), compiled
