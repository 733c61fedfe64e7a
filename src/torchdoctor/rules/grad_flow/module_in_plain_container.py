"""TD122 module-in-plain-container."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD122",
    name="module-in-plain-container",
    category=Category.GRAD_FLOW,
    severity=Severity.ERROR,
    unsafe_fix=True,
    proof="lint",
    message="{what} stored in a plain {container} in `self.{attribute}`: it is not registered, so it is not trained, moved by .to() or saved",
    hint="Use `nn.ModuleList` / `nn.ModuleDict` for modules and `nn.ParameterList` / `nn.ParameterDict` for parameters.",
    variants={
        # trained by the class's own optimizers: only the rest of registration is lost
        "own-optimizers": Variant(message="{what} stored in a plain {container} in `self.{attribute}`: the class's own optimizers train them, but they are not registered, so `model.parameters()`, `.to()` and the state_dict (checkpoints) leave them out"),
        # the crash "optimizer got an empty parameter list": the model's only layers are in the container
        "optimizer-empty": Variant(message="{what} stored in a plain {container} in `self.{attribute}` are not registered, so `{model}.parameters()` is empty and `{optimizer}` got an empty parameter list{crashed}"),
    },
    sees={
        "lint": "layers in a plain `list`/`dict` attribute of an nn.Module (`nn.Parameter`s: a warning, TorchScript code keeps them so on purpose)",
        "run": "layers in a plain `list`/`dict`: they get gradients but no optimizer ever sees them; or, when they are all the model has, the crash \"optimizer got an empty parameter list\" (at the line that stores them)",
    },
    doc="""
## What it does
Flags submodules or `nn.Parameter`s created inside an `nn.Module` and stored in a plain
Python `list`, `tuple` or `dict` attribute, whether written as a display (`[...]`, `{...}`), as
a call (`dict(wte=nn.Embedding(...))`), filled with `.append()`, or rebuilt by concatenation
(`self.layers = self.layers + [Block()]`). When the class builds optimizers over them itself
(`SGD(self.heads[i].parameters())`), they do train, and the finding is a warning about the rest:
`.to()`, `model.parameters()` and the state_dict leave them out.

## Why is this bad?
`nn.Module` registers only attributes that are themselves modules or parameters. Layers in a
plain list are invisible to `model.parameters()`, `model.to(device)`, `state_dict()` and
`model.train()/eval()`: the optimizer never updates them, they stay on the CPU, and they
are not saved. If all layers are hidden you get "optimizer got an empty parameter list";
if only some are, nothing is reported at all.

`torchdoctor lint` reports `nn.Parameter`s in a plain list as a warning, not an error: TorchScript code
keeps parameters in a plain list on purpose (`torch.jit.script` accepts `self.ws[i]` on a
plain list of tensors but not on an `nn.ParameterList`, checked on torch 2.13) and fills it
from the checkpoint by hand. A plain list of modules cannot be scripted at all, so it stays
an error.

## Example
```python
from torch import nn

class MLP(nn.Module):
    def __init__(self, sizes):
        super().__init__()
        self.layers = [nn.Linear(a, b) for a, b in zip(sizes, sizes[1:])]

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x
```

Use instead:
```python
from torch import nn

class MLP(nn.Module):
    def __init__(self, sizes):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes, sizes[1:]))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x
```

## Fix safety
The fix wraps the list in `nn.ModuleList(...)` / the dict in `nn.ModuleDict(...)`. It changes
the model's `state_dict` keys (the layers appear in it), which is the point, but old
checkpoints saved without them will report missing keys.
""",
)
