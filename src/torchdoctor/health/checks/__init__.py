"""The checks of `torchdoctor check`, one module each, in the order the report lists them.

Each module has `NAME`, `TITLE`, `RULES` (the codes it can report) and `run(ctx) -> Outcome`:
all four or none (a helper), checked as the modules are loaded (core/plugins.py).
"""
