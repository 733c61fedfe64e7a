"""`torchdoctor lint`: static analysis of PyTorch training code (nothing is imported or run).

How it works: `runner` finds the files (`files`: folders walked, gitignore-style excludes),
reads them (`source`), and hands each to the `engine`: one `ast.parse`, one walk (`context`)
that resolves names through imports (`names`), follows what values are (`flow`: models, losses,
optimizers, loaders, probabilities), records the calls of each function in order (`model.Event`,
read through `steps`), and calls the registered checks (`checks/`) by node type. Fixes are data
(`fixes`), applied only when the result still parses. The package never imports torch.

Writing a rule: see docs/lint-rules-dev.md; the API is `torchdoctor.lint.api`
(`@check(codes, on, names=..., tracks=..., needs_torch=...)`, `Context`, `Kind`, `Event`).
"""
