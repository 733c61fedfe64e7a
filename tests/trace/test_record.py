"""The trace record's per-line op table."""
from torchdoctor.trace.attribute import TOP_OPS, OpStats
from torchdoctor.trace.record import _top


def test_the_costliest_ops_and_every_op_the_line_called_itself() -> None:
    # a composite op the line called (aten::linear) spends almost no time of its own: it stays in the
    # table however many of its children cost more, or which ops are listed would depend on the machine
    ops = {f"aten::child{i}": OpStats(count=1, ns=1000 - i) for i in range(TOP_OPS + 3)}
    ops["aten::linear"] = OpStats(count=2, ns=5, direct=2)
    names = [name for name, _ in _top(ops)]
    assert names == [f"aten::child{i}" for i in range(TOP_OPS)] + ["aten::linear"]


def test_cheap_ops_called_from_inside_other_ops_are_cut() -> None:
    ops = {f"aten::op{i}": OpStats(count=1, ns=100 - i) for i in range(TOP_OPS + 2)}
    assert len(_top(ops)) == TOP_OPS
