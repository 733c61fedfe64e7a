import pytest

from torchdoctor.core import registry
from torchdoctor.core.suppress import drop_suppressed, is_suppressed

FINDING = registry.get("TD101").finding(file="m.py", line=1, fields={"source": "x"})


@pytest.mark.parametrize(
    ("line", "silenced"),
    [
        ("loss = ce(p, y)", False),
        ("loss = ce(p, y)  # noqa", True),
        ("loss = ce(p, y)  # noqa: TD101", True),
        ("loss = ce(p, y)  # noqa: td101, TD110", True),
        ("loss = ce(p, y)  # noqa: TD110", False),
        ("loss = ce(p, y)  # torchdoctor: ignore", True),
        ("loss = ce(p, y)  # torchdoctor: ignore[TD101]", True),
        ("loss = ce(p, y)  # torchdoctor: ignore[softmax-before-cross-entropy]", True),
        ("loss = ce(p, y)  # torchdoctor: ignore[TD102]", False),
        ("s = '# not a comment'", False),
    ],
)
def test_line_comments(line: str, silenced: bool) -> None:
    assert is_suppressed(FINDING, line) is silenced


def test_drop_suppressed_reads_the_findings_own_line() -> None:
    lines = {1: "x = 1  # noqa: TD101", 2: "y = 2"}
    other = registry.get("TD101").finding(file="m.py", line=2, fields={"source": "x"})
    kept = drop_suppressed([FINDING, other], lambda _file, line: lines[line])
    assert kept == [other]
