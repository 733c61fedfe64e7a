"""Which files are the user's: library code is not, wherever it is imported from."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from torchdoctor.core.locate import is_user_file, short_path

JITTER = "import torch\n\n\ndef jitter(x):\n    return (x + torch.randn_like(x) * 0.01).clamp(-3, 3)\n"


def install_with_pip(folder: Path, name: str) -> Path:
    """`pip install --target folder` of a one-module package `name` (a real installed package:
    its dist-info is in `folder`, whose path says nothing about packages)."""
    project = folder.parent / f"{name}-source"
    (project / name).mkdir(parents=True)
    (project / name / "__init__.py").write_text(JITTER)
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
        f'[project]\nname = "{name}"\nversion = "1.0"\n'
    )
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--no-index",
                    "--disable-pip-version-check", "--target", str(folder), str(project)], check=True, capture_output=True)
    return folder / name / "__init__.py"


def test_a_package_installed_in_a_folder_on_the_path_is_not_the_users(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    installed = install_with_pip(tmp_path / "libs", "jitterpkg")
    mine = tmp_path / "mine" / "helpers.py"  # a folder of the user's own modules on the path, nothing installed there
    mine.parent.mkdir()
    mine.write_text(JITTER)
    monkeypatch.syspath_prepend(str(tmp_path / "libs"))
    monkeypatch.syspath_prepend(str(mine.parent))
    assert not is_user_file(str(installed))
    assert is_user_file(str(mine))
    (tmp_path / "libs" / "notes.py").write_text("x = 1\n")  # beside the packages, but installed by no one
    assert is_user_file(str(tmp_path / "libs" / "notes.py"))


def test_a_folder_named_site_packages_holds_libraries(tmp_path: Path) -> None:
    module = tmp_path / "site-packages" / "fakeaug" / "__init__.py"
    module.parent.mkdir(parents=True)
    module.write_text(JITTER)
    assert not is_user_file(str(module))
    assert is_user_file(str(tmp_path / "train.py"))


def test_paths_for_people_are_relative_or_start_at_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "project").mkdir()
    monkeypatch.chdir(tmp_path / "project")
    assert short_path(str(tmp_path / "project" / "train.py")) == "train.py"
    assert short_path(str(tmp_path / "home" / "lib" / "x.py")) == os.path.join("~", "lib", "x.py")
    assert short_path(str(tmp_path / "elsewhere" / "x.py")) == str(tmp_path / "elsewhere" / "x.py")
