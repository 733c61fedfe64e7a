"""`python -m torchdoctor.dev new-rule --name ... --category ... --lint --run [--code TD280]`;
`python -m torchdoctor.dev generate [--check]`; `python -m torchdoctor.dev torch-api`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from torchdoctor.core import codes
from torchdoctor.core.errors import UsageError
from torchdoctor.core.finding import Category, Severity
from torchdoctor.dev.generate import generate, stale
from torchdoctor.dev.scaffold import DETECTOR_KINDS, NewRule, checkout_root, proposed_code, write_rule


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m torchdoctor.dev", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    new = commands.add_parser("new-rule", help="write a rule, stubs for its detectors and its two-sided tests")
    new.add_argument("--code", help="the new rule's code, in its category's block (core/codes.py); "
                                    "default: the block's next free code")
    new.add_argument("--name", required=True, help="kebab-case name of the bad pattern, e.g. softmax-before-cross-entropy")
    new.add_argument("--category", required=True, choices=[c.value for c in Category])
    new.add_argument("--severity", default="warning", choices=[s.value for s in Severity])
    for kind, what in DETECTOR_KINDS.items():
        new.add_argument(f"--{kind}", action="store_true", help=f"add a {what}")
    new.add_argument("--root", type=Path, default=None, help="the source checkout to write into (default: this one)")
    derive = commands.add_parser("generate", help="write every text derived from the rules: docs/rules.md, the rule "
                                                  "tables of docs/lint.md and docs/run.md, the table of checks of "
                                                  "docs/check.md, the README's counts")
    derive.add_argument("--check", action="store_true", help="write nothing; exit 1 naming the stale files")
    derive.add_argument("--root", type=Path, default=None, help="the source checkout (default: this one)")
    commands.add_parser("torch-api", help="add the installed torch's (and torchvision's) public names and call "
                                          "signatures to linter/data/torch_api.json (TD574 reads it)")
    args = parser.parse_args(argv)
    if args.command == "torch-api":
        from torchdoctor.dev import torch_api  # imports torch: only for this command

        versions = torch_api.write()
        print(f"{torch_api.TABLE}: added {', '.join(f'{k} {v}' for k, v in versions.items())}")
        return 0
    if args.command == "generate":
        return _generate(args.root, check=args.check)
    kinds = tuple(kind for kind in DETECTOR_KINDS if getattr(args, kind))
    try:
        category = Category(args.category)
        code = args.code
        if code is None:
            code = proposed_code(category)
            print(f"code {code}: the next free one of the {category.value} block "
                  f"({codes.shown(codes.BLOCKS[category])})")
        rule = NewRule(code, args.name, category, Severity(args.severity), kinds)
        root = (args.root or checkout_root()).resolve()
        written = write_rule(rule, root)
    except UsageError as exc:
        print(f"torchdoctor.dev: error: {exc}", file=sys.stderr)
        return 2
    for path in written:
        print(f"wrote {path.relative_to(root)}")
    print(f"Next: fill in the doc and templates of {rule.code}, make its detectors find the flagged side "
          "(the new tests fail until they do), then write the docs that list it: `python -m torchdoctor.dev generate`.")
    return 0


def _generate(root: Path | None, *, check: bool) -> int:
    try:
        root = (root or checkout_root()).resolve()
        paths = stale(root) if check else generate(root)
    except UsageError as exc:
        print(f"torchdoctor.dev: error: {exc}", file=sys.stderr)
        return 2
    for path in paths:
        print(f"{'stale' if check else 'wrote'} {path.relative_to(root)}")
    if check and paths:
        print("run `python -m torchdoctor.dev generate` to write them from the rules", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
