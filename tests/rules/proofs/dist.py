"""Proof harness for `dist` rules: a doc's Example is a JSON object of preflight facts (the
"distributed" section of `torchdoctor dist --format json`: the launch variables of one process,
and what each rank reported); the verdicts run on it exactly as on facts from real ranks."""

from __future__ import annotations

import json
from pathlib import Path

from torchdoctor.core.rule import Rule
from torchdoctor.dist.facts import load
from torchdoctor.dist.verdicts import judge


def triggered(source: str, folder: Path, rule: Rule) -> set[str]:
    return {finding.rule for finding in judge(load(json.loads(source)))}
