"""Properties of the package as a whole."""

import sys
from pathlib import Path

import torchdoctor
from tests import children


def test_public_api() -> None:
    assert sorted(torchdoctor.__all__) == ["Category", "Finding", "Report", "Severity", "__version__", "check", "watch"]


def test_cli_rules_and_renderers_do_not_import_torch() -> None:
    code = (
        "import sys, torchdoctor, torchdoctor.cli, torchdoctor.report.text, torchdoctor.report.sarif;"
        "from torchdoctor.core import registry; registry.all_rules(); cli=torchdoctor.cli.build_parser();"
        "print('torch' in sys.modules)"
    )
    result = children.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


ROOT = Path(__file__).resolve().parents[1]


def test_ci_runs_the_readme_test_command() -> None:
    opening = (ROOT / "README.md").read_text(encoding="utf-8").split("```bash\n", 1)[1].split("```", 1)[0]
    install_and_run, install_and_test = opening.strip().splitlines()
    assert "torchdoctor " in install_and_run and install_and_run.startswith("pip install torch==2.13.0 && ")
    assert "pytest" in install_and_test
    assert install_and_test in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
