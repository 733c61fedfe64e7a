"""Proof harness for `env` rules: a doc's Example is a JSON object of probe facts (the
"environment" section of `torchdoctor env --format json`, any field left out = not collected);
the verdicts run on it exactly as they run on facts probed from a machine."""

from __future__ import annotations

import json
from pathlib import Path

from torchdoctor.core.rule import Rule
from torchdoctor.env.facts import EnvFacts, from_dict
from torchdoctor.env.verdicts import judge


def triggered(source: str, folder: Path, rule: Rule) -> set[str]:
    facts = from_dict(EnvFacts, json.loads(source))
    return {finding.rule for finding in judge(facts)}
