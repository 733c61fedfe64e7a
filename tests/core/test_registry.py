import pytest

from torchdoctor.core import registry
from torchdoctor.core.errors import UsageError


def test_codes_and_names_are_unique_and_well_formed() -> None:
    rules = registry.all_rules()
    assert len({r.code for r in rules}) == len(rules)
    assert len({r.name for r in rules}) == len(rules)
    assert [r.code for r in rules] == sorted(r.code for r in rules)


def test_lookup_by_code_any_case_and_by_name() -> None:
    assert registry.get("td101").name == "softmax-before-cross-entropy"
    assert registry.get("softmax-before-cross-entropy").code == "TD101"
    with pytest.raises(UsageError, match="torchdoctor rules"):
        registry.get("TD999")


@pytest.mark.parametrize(
    ("selector", "expected"),
    [("ALL", True), ("TD1", True), ("TD10", True), ("TD101", True), ("TD102", False),
     ("loss", True), ("optimizer", False), ("softmax-before-cross-entropy", True)],
)
def test_selectors(selector: str, expected: bool) -> None:
    assert registry.matches(registry.get("TD101"), selector) is expected


def test_unknown_selector_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="unknown rule selector 'TD9'"):
        registry.validate_selectors(["TD9"])
    registry.validate_selectors(["ALL", "loss", "TD1", "missing-zero-grad"])
