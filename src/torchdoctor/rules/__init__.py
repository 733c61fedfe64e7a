"""The rule catalogue: one module per rule, grouped by the contract's categories.

Each module defines `RULE = Rule(...)`: code, name, category, severity, message, hint and doc.
Detection lives with the commands (`torchdoctor.lint`, `.check`, `.run`, `.env`, `.dist`),
which point at these rules, so a bug has one code whichever command finds it. Importing this
package never imports torch.
"""
