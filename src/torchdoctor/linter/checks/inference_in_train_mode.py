"""TD340: a model whose weights the file loads, called for inference in train mode.

At the end of a file that calls `load_state_dict` and shows no training at all (no
`backward`, no optimizer, no trainer: read off the text first, so most files cost nothing),
and never switches any module's mode (`eval()`, `train()`, `train(False)`: read off the calls),
the first call of a model after its `model.load_state_dict(...)` in the same scope is reported
when the file shows the model's dropout or batch-norm layers (a class of the file, an
`nn.Sequential`, a torchvision builder).
"""

from __future__ import annotations

import ast

from torchdoctor.linter.api import FILE_END, Context, lint_check
from torchdoctor.linter.mode_layers import BATCHNORMS, DROPOUTS, mode_layers
from torchdoctor.rules.mode.inference_in_train_mode import RULE

#: words of a file that trains, or hands its model to something that does
_TRAINS = ("backward", "optim", ".fit(", "Trainer")


@lint_check(RULE, FILE_END, tracks={"load_state_dict", "eval", "train"})
def inference_in_train_mode(tree: ast.Module, ctx: Context) -> None:
    text = ctx.source.text
    if "load_state_dict" not in text or any(word in text for word in _TRAINS):
        return  # text tests only skip work when a word is absent or present: the calls decide
    events = [event for scope in ctx.scopes for event in scope.events]
    if any(event.name in ("eval", "train") and isinstance(event.node, ast.Call) and isinstance(event.node.func, ast.Attribute)
           for event in events):
        return  # some module's mode is chosen in this file
    for scope in ctx.scopes:
        loaded: dict[str, int] = {}
        for event in scope.events:
            name = event.receiver
            if name is None or "." in name:
                continue
            if event.name == "load_state_dict" and name not in loaded:
                loaded[name] = event.node.lineno
            elif event.name == "call" and loaded.get(name, 0) > 0:
                layers = mode_layers(scope, name, ctx)
                fields = {"model": f"`{name}`", "loaded": f"line {loaded[name]}"}
                loaded[name] = 0  # the first call only
                dropout, batchnorm = sorted(DROPOUTS & layers), sorted(BATCHNORMS & layers)
                if dropout:
                    fields["dropout"] = ", ".join(dropout)
                if batchnorm:
                    fields["batchnorm"] = ", ".join(batchnorm)
                if dropout or batchnorm:
                    variant = None if dropout and batchnorm else "dropout" if dropout else "batchnorm"
                    ctx.report(RULE, event.node, fields=fields, variant=variant)
