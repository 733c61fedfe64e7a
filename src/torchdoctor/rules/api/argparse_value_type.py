"""TD564 argparse-value-type."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD564",
    name="argparse-value-type",
    category=Category.API,
    severity=Severity.WARNING,
    proof="lint",
    message="`{option}` is parsed with `type=bool`: argparse calls `bool()` on the text given, and every non-empty text is True, so `{option} False` turns it on",
    hint='Use a flag: `action="store_true"` (or `action=argparse.BooleanOptionalAction` for `{option}`/`--no-...`).',
    variants={
        "missing": Variant(
            message="`{option}` defaults to the number {default} but has no `type=`: a value given on the command line arrives as text (`'{default}'`), not a number",
            hint="Add `type={type}`.",
        ),
        "int-float": Variant(
            message="`{option}` is parsed with `type=int` but defaults to the float {default}: a fraction given on the command line (`{option} 0.1`) fails to parse, and the default reaches the code as a float",
            hint="Use `type=float` for a fraction, or an int default for a count.",
        ),
    },
    sees={
        "lint": "an argparse `add_argument` (in a file that imports argparse) with `type=bool`, with a number default and neither `type=` nor `action=`, or with `type=int` and a fraction as default (`0.2`, `0.0`); at that call",
    },
    doc="""
## What it does
Flags `add_argument` calls of argparse whose value type is not what the script reads:
`type=bool`; a number default with no `type=` (and no `action=`); `type=int` with a default
that is a fraction (`0.2`, and `0.0` or `1.0`, which are how fractions are written; a count
written as `1e6` is left alone).

## Why is this bad?
argparse applies `type` to the text given on the command line, and never to the default:
- `type=bool` calls `bool("False")`, which is True: every value given turns the option on;
- without `type=`, `--lr 0.01` arrives as the text `'0.01'`: the default runs, and the first
  run with the option given fails inside the training (`'<' not supported between
  instances of 'str' and 'float'`) or, worse, repeats a string (`'2' * 3`);
- `type=int` with the default `0.0` refuses `--label-smoothing 0.1` (`invalid int value`), and
  the default reaches the code as a float (`range(1e6)` fails).

The script works as long as nobody passes the option, so the bug shows up in the one run where
someone does.

## Example
```python
import argparse

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--use-cuda", type=bool, default=False)
parser.add_argument("--lr", default=0.01)
parser.add_argument("--label-smoothing", type=int, default=0.0)
args = parser.parse_args()
device = torch.device("cuda" if args.use_cuda else "cpu")
```

Use instead:
```python
import argparse

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--use-cuda", action="store_true")
parser.add_argument("--lr", type=float, default=0.01)
parser.add_argument("--label-smoothing", type=float, default=0.0)
args = parser.parse_args()
device = torch.device("cuda" if args.use_cuda else "cpu")
```
""",
)
