"""How a lint rule reports: findings at a node of one file, and the edits of their fixes."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any

from torchdoctor.core.finding import Edit, Finding, Fix, Severity
from torchdoctor.core.rule import Rule
from torchdoctor.core.suppress import is_suppressed
from torchdoctor.linter.source import Source


class Reporter:
    """The findings of the enabled rules in one file (`ctx.report`), and fix edits (`ctx.edit`)."""

    def __init__(self, source: Source, enabled: frozenset[str]) -> None:
        self.source = source
        self.enabled = enabled
        self.findings: list[Finding] = []

    def report(
        self,
        rule: Rule,
        node: ast.AST,
        *,
        fields: Mapping[str, Any] | None = None,
        fix: Fix | None = None,
        severity: Severity | None = None,
        evidence: dict[str, Any] | None = None,
        variant: str | None = None,
    ) -> None:
        """Report `rule` at `node`; `fields` fill the message and hint templates of the rule or
        of its `variant`.

        Findings of rules that are not enabled, or silenced by a `# noqa` / `# torchdoctor:
        ignore[...]` comment on the node's first line, are dropped here.
        """
        if rule.code not in self.enabled:
            return
        line = getattr(node, "lineno", 1)
        source = self.source
        finding = rule.finding(
            file=source.path,
            line=line,
            column=source.char_column(line, getattr(node, "col_offset", 0)),
            end_line=getattr(node, "end_lineno", None),
            end_column=(source.char_column(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]
                        if getattr(node, "end_lineno", None) is not None else None),
            fix=fix,
            severity=severity,
            variant=variant,
            evidence=evidence,
            fields=fields,
        )
        if is_suppressed(finding, source.line(line)):
            return
        self.findings.append(finding)

    # ------------------------------------------------------------------ fixes

    def edit(self, node: ast.AST, content: str) -> Edit:
        """Replace `node`'s source with `content`."""
        source = self.source
        return Edit(
            line=node.lineno,  # type: ignore[attr-defined]
            column=source.char_column(node.lineno, node.col_offset),  # type: ignore[attr-defined]
            end_line=node.end_lineno,  # type: ignore[attr-defined]
            end_column=source.char_column(node.end_lineno, node.end_col_offset),  # type: ignore[attr-defined]
            content=content,
        )

    def insert_after(self, node: ast.AST, content: str) -> Edit:
        source = self.source
        line, column = node.end_lineno, source.char_column(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]
        return Edit(line=line, column=column, end_line=line, end_column=column, content=content)

    def add_keyword(self, call: ast.Call, text: str) -> Edit:
        """Add `text` (e.g. `training=self.training`) as the call's last argument."""
        arguments: list[ast.expr | ast.keyword] = [*call.args, *call.keywords]
        last = max(arguments, key=lambda n: (n.end_lineno or 0, n.end_col_offset or 0), default=None)
        if last is None:
            source = self.source
            line, column = call.end_lineno, source.char_column(call.end_lineno, call.end_col_offset) - 1  # type: ignore[arg-type]
            return Edit(line=line, column=column, end_line=line, end_column=column, content=text)  # type: ignore[arg-type]
        return self.insert_after(last, ", " + text)
