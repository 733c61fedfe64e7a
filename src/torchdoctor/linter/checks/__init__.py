"""The lint detectors: one module per rule (or per family of rules that share one analysis).

Every module here is imported by `engine.all_checks()`; its `@lint_check(...)` functions register
themselves. See docs/lint-rules-dev.md.
"""
