"""Properties of the package as a whole."""

import subprocess
import sys

import torchdoctor


def test_public_api() -> None:
    assert sorted(torchdoctor.__all__) == ["Category", "Finding", "Report", "Severity", "__version__", "check", "watch"]


def test_cli_rules_and_renderers_do_not_import_torch() -> None:
    code = (
        "import sys, torchdoctor, torchdoctor.cli, torchdoctor.report.text, torchdoctor.report.sarif;"
        "from torchdoctor.core import registry; registry.all_rules(); cli=torchdoctor.cli.build_parser();"
        "print('torch' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"
