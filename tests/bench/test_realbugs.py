"""The real-bug corpus (bench/realbugs/cases, scored by bench/realbugs.py): every case file follows
bench/realbugs/FORMAT.md, the split by repository does not move, no evaluation-only repository is
mined, and a case is scored detected / located / silent-after as the bench says. No network and no
mirrors: the cases' files are not rebuilt here."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from tests.bench.bench_module import load

BENCH = Path(__file__).resolve().parents[2] / "bench"

# Issue 28: kept for an independent measurement, never mined.
EVALUATION_ONLY = {
    "pytorch/examples", "karpathy/nanogpt", "karpathy/mingpt", "vwxyzjn/cleanrl",
    "ikostrikov/pytorch-a2c-ppo-acktr-gail", "milesial/pytorch-unet", "eriklindernoren/pytorch-yolov3",
    "eriklindernoren/pytorch-gan", "kaixhin/rainbow", "jadore801120/attention-is-all-you-need-pytorch",
    "dlr-rm/stable-baselines3", "kuangliu/pytorch-cifar", "yunjey/pytorch-tutorial",
    "mehilshah/bug_reproducibility_dl_bugs", "orderlab/traincheck-evaluation-workloads",
}


realbugs = load("realbugs", "realbugs.py")

SHA_A, SHA_B = "a" * 40, "b" * 40


def case_record(**changes: object) -> dict:
    record = {"fixed": SHA_A, "buggy": SHA_B, "path": "train.py", "buggy_lines": [10], "fixed_lines": [10, 11],
              "kind": "eval-mode-missing", "summary": "evaluates in train mode; the fix calls eval()",
              "reach": "lint", "reach_why": "a static tool can see it", "runnable": False}
    record.update(changes)
    return record


def write_case_file(folder: Path, repo: str = "someone/project", **top: object) -> Path:
    data: dict = {"repo": repo, "kind_of_project": "vision", "cases": [case_record()]}
    data.update(top)
    path = folder / (repo.replace("/", "__") + ".json")
    path.write_text(json.dumps(data))
    return path


def test_every_case_file_of_the_corpus_follows_the_format() -> None:
    cases = realbugs.load_cases()
    assert len(cases) >= 100
    for case in cases:
        assert case.reach in ("lint", "run", "none")
        assert case.buggy_lines and case.fixed_lines
    # one file per repository, named after it
    files = sorted(realbugs.CASES.glob("*.json"))
    assert len({c.repo for c in cases}) == len(files)


def test_no_evaluation_only_repository_is_mined() -> None:
    mined = {c.repo.lower() for c in realbugs.load_cases()}
    assert not mined & EVALUATION_ONLY


def test_the_split_is_a_fixed_function_of_the_repository_name() -> None:
    # pinned: a change of the hash would move repositories between the halves
    assert realbugs.half("facebookresearch/detr") == "test"
    assert realbugs.half("lucidrains/denoising-diffusion-pytorch") == "dev"
    assert realbugs.half("Lucidrains/Denoising-Diffusion-Pytorch") == "dev"  # case does not matter
    cases = realbugs.load_cases()
    halves = realbugs.split(cases)
    repos = len({c.repo for c in cases})
    assert set(halves["dev"]) | set(halves["test"]) == {c.repo for c in cases}
    assert not set(halves["dev"]) & set(halves["test"])
    for which in ("dev", "test"):  # about half the repositories each
        assert len(halves[which]) >= 0.3 * repos
        assert all(c.half == which for c in cases if c.repo in halves[which])


@pytest.mark.parametrize(("change", "field"), [
    ({"fixed": "1234"}, "'fixed'"),
    ({"buggy": SHA_A}, "same commit"),
    ({"path": "notes.md"}, "'path'"),
    ({"buggy_lines": []}, "'buggy_lines'"),
    ({"fixed_lines": [0]}, "'fixed_lines'"),
    ({"kind": "Eval Mode"}, "'kind'"),
    ({"reach": "maybe"}, "'reach'"),
    ({"reach_why": "  "}, "'reach_why'"),
    ({"runnable": "no"}, "'runnable'"),
    ({"runnable": True}, "'driver'"),  # a runnable case names its driver
    ({"runnable": True, "driver": "no_such_driver.py"}, "'driver'"),
    ({"driver": "hunkim__PyTorchZeroToAll__4328980cfe.py"}, "'driver'"),  # a driver for a case not runnable
])
def test_a_bad_case_is_refused_naming_the_file_and_the_field(tmp_path: Path, change: dict, field: str) -> None:
    path = write_case_file(tmp_path, cases=[case_record(**change)])
    with pytest.raises(realbugs.CaseError) as error:
        realbugs.load_file(path)
    assert path.name in str(error.value) and "cases[0]" in str(error.value) and field in str(error.value)


def test_a_missing_field_and_a_misnamed_file_are_refused(tmp_path: Path) -> None:
    record = case_record()
    del record["summary"]
    path = write_case_file(tmp_path, cases=[record])
    with pytest.raises(realbugs.CaseError, match="missing field 'summary'"):
        realbugs.load_file(path)
    wrong = tmp_path / "other__name.json"
    write_case_file(tmp_path).rename(wrong)
    with pytest.raises(realbugs.CaseError, match="must be named someone__project.json"):
        realbugs.load_file(wrong)
    assert realbugs.main(["--cases", str(tmp_path), "--split"]) == 2  # the CLI says so and stops


def result_with(folder: Path, buggy: list[tuple[str, int]], fixed: list[tuple[str, int]]):
    case = realbugs.load_file(write_case_file(folder, cases=[case_record()]))[0]
    result = realbugs.Result(case, rebuilt=True)
    result.buggy_findings = [{"rule": r, "line": n, "severity": "warning", "message": ""} for r, n in buggy]
    result.fixed_findings = [{"rule": r, "line": n, "severity": "warning", "message": ""} for r, n in fixed]
    realbugs.score(result)
    return result


def test_detected_located_and_silent_after_are_scored_by_rule_and_line(tmp_path: Path) -> None:
    # buggy lines [10], fixed lines [10, 11]
    hit = result_with(tmp_path, [("TD133", 11)], [])
    assert hit.detected and hit.located and hit.silent_after and hit.new_rules == ["TD133"]
    elsewhere = result_with(tmp_path, [("TD133", 40)], [])
    assert elsewhere.detected and not elsewhere.located
    same_on_both = result_with(tmp_path, [("TD133", 11)], [("TD133", 12)])  # the fix did not remove it
    assert not same_on_both.detected and not same_on_both.located and not same_on_both.silent_after
    fewer_after = result_with(tmp_path, [("TD133", 11), ("TD133", 30)], [("TD133", 31)])  # counted as a multiset
    assert fewer_after.detected and fewer_after.located and fewer_after.silent_after
    brought = result_with(tmp_path, [], [("TD110", 12)])
    assert not brought.detected and not brought.silent_after and brought.new_after


def test_lint_is_run_once_over_files_that_keep_their_names(tmp_path: Path) -> None:
    buggy, fixed = tmp_path / "0" / "buggy" / "train.py", tmp_path / "0" / "fixed" / "train.py"
    buggy.parent.mkdir(parents=True)
    fixed.parent.mkdir(parents=True)
    buggy.write_text("import torch\nimport torch.nn.functional as F\n\n\ndef loss(x, y):\n"
                     "    return F.cross_entropy(F.softmax(x, dim=1), y)\n")
    fixed.write_text("import torch\nimport torch.nn.functional as F\n\n\ndef loss(x, y):\n"
                     "    return F.cross_entropy(x, y)\n")
    found = realbugs.lint([str(buggy), str(fixed)])
    assert [f["rule"] for f in found[str(buggy)]] == ["TD101"] and found[str(buggy)][0]["line"] == 6
    assert found[str(fixed)] == []


def test_a_case_whose_mirror_is_absent_is_counted_not_rebuilt(tmp_path: Path) -> None:
    cases = realbugs.load_file(write_case_file(tmp_path))
    results = realbugs.evaluate(cases, tmp_path / "no-mirrors")
    assert not results[0].rebuilt and "no mirror" in results[0].why_not
    assert realbugs.summary(results)["not_rebuilt"] == 1


def test_a_case_is_rebuilt_from_a_local_clone_and_scored_end_to_end(tmp_path: Path) -> None:
    # a non-bare clone at <mirrors>/<owner>+<name>/repo (.git inside) is found as well as a bare mirror
    clone = tmp_path / "mirrors" / "someone+project" / "repo"
    (clone / "pkg").mkdir(parents=True)
    git = ["git", "-C", str(clone), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(clone)], check=True)
    source = clone / "pkg" / "train.py"
    shas = []
    for body in ("    return F.cross_entropy(F.softmax(x, dim=1), y)\n", "    return F.cross_entropy(x, y)\n"):
        source.write_text("import torch.nn.functional as F\n\n\ndef loss(x, y):\n" + body)
        subprocess.run([*git, "add", "-A"], check=True)
        subprocess.run([*git, "commit", "-qm", "c"], check=True)
        shas.append(subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip())
    cases_dir = tmp_path / "cases"
    cases_dir.mkdir()
    write_case_file(cases_dir, cases=[case_record(buggy=shas[0], fixed=shas[1], path="pkg/train.py",
                                                  buggy_lines=[5], fixed_lines=[5])])
    results = realbugs.evaluate(realbugs.load_cases(cases_dir), tmp_path / "mirrors")
    assert results[0].rebuilt and results[0].detected and results[0].located and results[0].silent_after
    assert results[0].new_rules == ["TD101"]


def commit_versions(clone: Path, path: str, bodies: list[str]) -> list[str]:
    """A git repository at `clone` with one commit per body of `path`; their shas."""
    git = ["git", "-C", str(clone), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(clone)], check=True)
    (clone / path).parent.mkdir(parents=True, exist_ok=True)
    shas = []
    for body in bodies:
        (clone / path).write_text(body)
        subprocess.run([*git, "add", "-A"], check=True)
        subprocess.run([*git, "commit", "-qm", "c"], check=True)
        shas.append(subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip())
    return shas


@pytest.mark.slow
def test_a_runnable_case_is_run_in_both_trees_and_scored_on_the_repositorys_lines(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # buggy: the mean of a bool tensor, which torch refuses (a crash `run` explains at the repository's line);
    # fixed: the mean of its float copy. The driver is ours: its lines never count.
    shas = commit_versions(tmp_path / "mirrors" / "someone+project" / "repo", "pkg/metrics.py", [
        "import torch\n\n\ndef accuracy(pred, y):\n    return torch.mean(pred == y)\n",
        "import torch\n\n\ndef accuracy(pred, y):\n    return torch.mean((pred == y).float())\n",
    ])
    drivers = tmp_path / "drivers"
    drivers.mkdir()
    (drivers / "driver.py").write_text("import torch\nfrom pkg.metrics import accuracy\n\n"
                                       "print(accuracy(torch.tensor([1, 2, 3]), torch.tensor([1, 0, 3])))\n")
    monkeypatch.setattr(realbugs, "DRIVERS", drivers)
    cases_dir = tmp_path / "cases"
    cases_dir.mkdir()
    write_case_file(cases_dir, cases=[case_record(
        buggy=shas[0], fixed=shas[1], path="pkg/metrics.py", buggy_lines=[5], fixed_lines=[5], kind="dtype-mismatch",
        reach="run", runnable=True, driver="driver.py")])
    result = realbugs.evaluate(realbugs.load_cases(cases_dir), tmp_path / "mirrors")[0]
    assert result.run is not None
    buggy, fixed = result.run["buggy"], result.run["fixed"]
    assert buggy["exit"] != 0 and fixed["exit"] == 0
    assert [(f["file"], f["line"]) for f in buggy["findings"] if f["rule"] != "TD001"] == [("pkg/metrics.py", 5)]
    assert fixed["findings"] == []
    assert result.run["detected"] and result.run["located"] and "TD001" not in result.run["new_rules"]
    assert result.detected and result.located and result.new_rules == [f"run:{result.run['new_rules'][0]}"]
    summary = realbugs.summary([result])
    assert (summary["run_scored"], summary["run_detected"], summary["run_located"]) == (1, 1, 1)


def test_a_runnable_case_whose_driver_needs_a_missing_module_is_skipped_and_says_which(tmp_path: Path) -> None:
    case = realbugs.load_file(write_case_file(tmp_path, cases=[case_record(
        runnable=True, driver="hunkim__PyTorchZeroToAll__4328980cfe.py", needs=["no_such_module_here"])]))[0]
    verdict = realbugs.run_case(realbugs.Result(case, rebuilt=True), tmp_path, tmp_path)
    assert "no_such_module_here" in verdict["skipped"]
