"""SARIF 2.1.0 for GitHub code scanning: rules with their docs, results with locations.

Only the rules that have a result are embedded (as ruff does): every rule's doc would make
even an empty report over half a megabyte.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TextIO

from torchdoctor._version import __version__
from torchdoctor.core import registry
from torchdoctor.core.finding import Severity
from torchdoctor.core.report import Report

LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
URI = "https://github.com/torchdoctor/torchdoctor"


def document(report: Report) -> dict[str, Any]:
    fired = {finding.rule for finding in report.findings}
    rules = [rule for rule in registry.all_rules() if rule.code in fired]
    index = {rule.code: i for i, rule in enumerate(rules)}
    results = []
    for finding in report.sorted_findings():
        result: dict[str, Any] = {
            "ruleId": finding.rule,
            "level": LEVEL[finding.severity],
            "message": {"text": f"{finding.message}\nFix: {finding.hint}"},
        }
        if finding.rule in index:
            result["ruleIndex"] = index[finding.rule]
        if finding.file is not None:
            region: dict[str, int] = {}
            if finding.line is not None:
                region["startLine"] = finding.line
                if finding.column is not None:
                    region["startColumn"] = finding.column + 1
                if finding.end_line is not None:
                    region["endLine"] = finding.end_line
                if finding.end_column is not None:
                    region["endColumn"] = finding.end_column + 1
            location: dict[str, Any] = {"artifactLocation": {"uri": Path(finding.file).as_posix()}}
            if region:
                location["region"] = region
            result["locations"] = [{"physicalLocation": location}]
        results.append(result)
    return {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "torchdoctor",
                        "version": __version__,
                        "informationUri": URI,
                        "rules": [
                            {
                                "id": rule.code,
                                "name": rule.name,
                                "shortDescription": {"text": rule.summary},
                                "fullDescription": {"text": rule.doc},
                                "help": {"text": rule.doc, "markdown": rule.doc},
                                "defaultConfiguration": {"level": LEVEL[rule.severity]},
                                "properties": {"category": rule.category.value, "tags": [rule.category.value]},
                            }
                            for rule in rules
                        ],
                    }
                },
                "results": results,
            }
        ],
    }


def write(report: Report, stream: TextIO, **_: Any) -> None:
    stream.write(json.dumps(document(report), indent=2, ensure_ascii=False) + "\n")
