"""Properties of the package as a whole."""

import sys
from pathlib import Path

import torchdoctor
from tests import children


def test_public_api() -> None:
    assert sorted(torchdoctor.__all__) == ["Category", "Finding", "Report", "Severity", "__version__", "check", "lint", "watch"]


def test_cli_rules_and_renderers_do_not_import_torch() -> None:
    code = (
        "import sys, torchdoctor, torchdoctor.cli, torchdoctor.renderers.text, torchdoctor.renderers.sarif;"
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


def test_the_readme_first_command_installs_numpy() -> None:
    """torch imported without NumPy warns "Failed to initialize NumPy" before anything else is
    printed, and real training programs need it: the first command a reader runs installs it."""
    opening = (ROOT / "README.md").read_text(encoding="utf-8").split("```bash\n", 1)[1].split("```", 1)[0]
    install_and_run = opening.strip().splitlines()[0]
    assert "&& pip install -e '.[examples]' && torchdoctor " in install_and_run
    assert any(req.startswith("numpy") for req in _pyproject()["project"]["optional-dependencies"]["examples"])


def _pyproject() -> dict:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _third_party_imports(folder: Path) -> set[str]:
    """Top-level modules imported by the programs under `folder` that neither Python nor torch ship."""
    import ast

    found: set[str] = set()
    for path in folder.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found.update(alias.name.partition(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.partition(".")[0])
    return found - set(sys.stdlib_module_names) - {"torch", "torchdoctor"}


def test_every_example_runs_with_the_examples_extra() -> None:
    """`pip install -e .` brings torch and rich; what the examples import beyond that is the
    `examples` extra, and the READMEs say to install it."""
    extra = {req.split(">")[0].split("=")[0].split("[")[0].strip().lower()
             for req in _pyproject()["project"]["optional-dependencies"]["examples"]}
    assert _third_party_imports(ROOT / "examples") <= extra
    assert "numpy" in extra  # labs 05, 11 and 14 are NumPy pitfalls
    for readme in (ROOT / "README.md", ROOT / "examples" / "lab" / "README.md"):
        assert "pip install -e '.[examples]'" in readme.read_text(encoding="utf-8"), readme


def test_readme_says_how_to_get_the_cpu_wheel() -> None:
    """Plain PyPI's torch on Linux is the CUDA build: a user without a GPU needs PyTorch's CPU index."""
    setup = (ROOT / "README.md").read_text(encoding="utf-8").split("## ", 1)[0]
    assert "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu" in setup
