from torchdoctor.core.finding import Category, Edit, Finding, Fix, Severity
from torchdoctor.core.registry import get


def test_severity_order_and_values() -> None:
    assert [s.value for s in Severity] == ["error", "warning", "info"]
    assert Severity.ERROR.rank > Severity.WARNING.rank > Severity.INFO.rank


def test_categories_are_the_contracts() -> None:
    assert {c.value for c in Category} == {
        "device", "dtype", "grad-flow", "grad-mode", "optimizer", "loss", "mode", "data", "numerics",
        "memory", "distributed", "compile", "env", "performance", "api",
    }


def test_rule_fills_message_and_hint_templates() -> None:
    finding = get("TD101").finding(file="model.py", line=41, column=15, fields={"source": "softmax at model.py:40"})
    assert finding.message == "CrossEntropyLoss receives probabilities: its input comes from softmax at model.py:40"
    assert finding.rule == "TD101" and finding.name == "softmax-before-cross-entropy"
    assert finding.category is Category.LOSS and finding.severity is Severity.ERROR
    assert finding.location == "model.py:41:16"


def test_to_dict_has_contract_fields_and_one_based_columns() -> None:
    fix = Fix("add training=", (Edit(3, 4, 3, 4, "x"),))
    finding = Finding("TD130", "n", Category.MODE, Severity.ERROR, "m", "h", "a.py", 3, column=4, fix=fix, count=2)
    data = finding.to_dict()
    assert list(data)[:8] == ["rule", "name", "category", "severity", "message", "hint", "file", "line"]
    assert data["column"] == 5 and data["count"] == 2
    assert data["fix"]["edits"][0]["content"] == "x"


def test_environment_finding_has_null_location() -> None:
    data = Finding("TD600", "n", Category.ENV, Severity.WARNING, "m", "h").to_dict()
    assert data["file"] is None and data["line"] is None and "column" not in data
