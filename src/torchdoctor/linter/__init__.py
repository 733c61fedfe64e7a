"""`torchdoctor lint` and `torchdoctor.lint()`: the static checks (nothing is imported or run, and
torch need not be installed).

`runner` finds the files (`files`: folders walked, gitignore-style excludes), reads them
(`source`), and hands each to the `engine`: one `ast.parse`, one walk (`context`) that resolves
names through imports (`names`), follows what values are (`flow`: models, losses, optimizers,
loaders, probabilities), records the calls of each function in order (`model.Event`, read
through `steps`), and calls the registered checks (`checks/`) by node type. Fixes are data
(`fixes`), applied only when the result still parses. The package never imports torch.
Writing a rule: see docs/lint-rules-dev.md; the API is `torchdoctor.linter.api`
(`@lint_check(rules, on, names=..., tracks=..., needs_torch=...)`, `Context`, `Kind`, `Event`).

The package is named `linter`, not `lint`, so that `torchdoctor.lint` is the function
(`python_api.lint`): a package of the same name would replace it on `torchdoctor` as soon as
any of its modules is imported.
"""
