from pathlib import Path

import pytest

from torchdoctor.core import registry
from torchdoctor.core.config import Config, load
from torchdoctor.core.errors import UsageError
from torchdoctor.core.finding import Severity

TD101 = registry.get("TD101")
TD110 = registry.get("TD110")


def write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "pyproject.toml"
    path.write_text(body)
    return path


def test_defaults_enable_everything() -> None:
    config = Config()
    assert config.enabled(TD101) and config.enabled(TD110) and config.fail_on == "error"


def test_reads_tool_table_and_finds_the_nearest_pyproject(tmp_path: Path) -> None:
    write(tmp_path, '[tool.torchdoctor]\nselect = ["loss"]\nignore = ["TD102"]\nfail-on = "warning"\n'
                    '[tool.torchdoctor.severity]\nTD101 = "warning"\n')
    nested = tmp_path / "a" / "b"
    nested.mkdir(parents=True)
    config = load(start=nested)
    assert config.enabled(TD101) and not config.enabled(TD110)
    assert not config.enabled(registry.get("TD102"))
    assert config.severity_of(TD101) is Severity.WARNING
    assert config.fail_on == "warning"


def test_more_specific_selector_wins() -> None:
    config = Config(select=("TD101",), ignore=("loss",))
    assert config.enabled(TD101)
    assert not Config(select=("loss",), ignore=("TD101",)).enabled(TD101)


def test_command_line_overrides(tmp_path: Path) -> None:
    config = load(write(tmp_path, '[tool.torchdoctor]\nignore = ["TD110"]\n'))
    config = config.with_overrides(select=["TD1"], ignore=["TD102"], severity=["TD101=info"], fail_on="never")
    assert not config.enabled(TD110) and not config.enabled(registry.get("TD102"))
    assert config.severity_of(TD101) is Severity.INFO and config.fail_on == "never"


def test_apply_filters_and_overrides_findings() -> None:
    config = Config(ignore=("TD110",), severity={"TD101": Severity.WARNING})
    findings = [TD101.finding(fields={"source": "x"}), TD110.finding()]
    kept = config.apply(findings)
    assert [f.rule for f in kept] == ["TD101"] and kept[0].severity is Severity.WARNING


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('[tool.torchdoctor]\nselect = ["TD9"]\n', "unknown rule selector"),
        ('[tool.torchdoctor]\nfail-on = "sometimes"\n', "fail-on"),
        ('[tool.torchdoctor.severity]\nTD101 = "fatal"\n', "severity must be"),
        ('[tool.torchdoctor]\nselct = ["ALL"]\n', "unknown key"),
        ("[tool.torchdoctor\n", "not valid TOML"),
    ],
)
def test_bad_config_is_a_clear_usage_error(tmp_path: Path, body: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        load(write(tmp_path, body))


def test_missing_config_file_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="does not exist"):
        load(tmp_path / "nope.toml")
