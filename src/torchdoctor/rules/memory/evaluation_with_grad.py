"""TD161 evaluation-with-grad."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD161",
    name="evaluation-with-grad",
    category=Category.MEMORY,
    severity=Severity.WARNING,
    proof="lint",
    message="`{function}()` puts `{model}` in eval mode and runs it over a DataLoader with autograd on: every batch records a graph no backward() will use",
    hint="Wrap the evaluation in `with torch.no_grad():` (or `torch.inference_mode()`), or decorate `{function}` with `@torch.no_grad()`.",
    variants={
        # run: forward passes in eval mode with autograd on, in a function
        "forwards-in-function": Variant(message="{model} runs in eval mode with autograd on in `{function}()` ({forwards} forward passes): each one records a graph and keeps its activations for a backward() that never comes", hint="Wrap the evaluation in `with torch.no_grad():` (or `torch.inference_mode()`), or decorate `{function}` with `@torch.no_grad()`."),
        # the same, at the script's top level
        "forwards": Variant(message="{model} runs in eval mode with autograd on ({forwards} forward passes): each one records a graph and keeps its activations for a backward() that never comes", hint="Wrap the evaluation in `with torch.no_grad():` (or `torch.inference_mode()`)."),
        # the evaluation runs inside a `with` block that could turn gradients off
        "block": Variant(hint="Use `torch.no_grad()` (or `torch.inference_mode()`) here: nothing in this block needs gradients."),
        # the evaluation loop is at the script's top level (lint)
        "script": Variant(message="after `{model}.eval()` (line {eval_line}) the script runs `{model}` over a DataLoader with autograd on: every batch records a graph no backward() will use", hint="Wrap the evaluation loop in `with torch.no_grad():` (or `torch.inference_mode()`)."),
        # the same, inside a `with` block
        "script-block": Variant(message="after `{model}.eval()` (line {eval_line}) the script runs `{model}` over a DataLoader with autograd on: every batch records a graph no backward() will use", hint="Use `torch.no_grad()` (or `torch.inference_mode()`) here: nothing in this block needs gradients."),
        # a trained model run over held-out data with nothing backpropagated (lint)
        "held-out": Variant(message="`{model}` runs over held-out data (`{loader}`) with autograd on, and nothing here backpropagates: every batch records a graph no backward() will use", hint="Wrap the evaluation loop in `with torch.no_grad():` (or `torch.inference_mode()`), and call `model.eval()` before it."),
    },
    sees={
        "lint": "a validation function with `model.eval()` but no `no_grad`, called with gradients on; or, without `eval()`, a loop over held-out data (`train=False` dataset, `test_loader` / `val_set` names) running a trained model with gradients on and no backward()",
        "run": "two or more forward passes of a model in eval mode with autograd on, and no backward() uses their graphs; reported at the forward call",
    },
    doc="""
## What it does
Flags a function that calls `model.eval()`, then runs the model over a DataLoader with
gradients enabled and never calls backward() or steps an optimizer, when this file calls the
function outside `torch.no_grad()`; in a script, the same after a module-level `model.eval()`
(up to the next `model.train()`). The finding points at the loop over the DataLoader that
`no_grad()` should wrap, or at the `with torch.enable_grad():` that turns autograd back on.
Without any `eval()`, the same is said of a loop over held-out data (a DataLoader over a dataset
built with `train=False`, or a loader or dataset named `test_loader`, `val_set`, ...) that runs a
model an optimizer of the file trains and never backpropagates. Lint leaves alone a function that asks for gradients itself
(`x.requires_grad = True`, `requires_grad_()`, `torch.autograd.grad`: saliency maps, adversarial
examples).

## Why is this bad?
`eval()` switches dropout and batch-norm to inference behaviour; it does not turn autograd
off. Every forward pass still records its graph and keeps the activations it needs for a
backward that never comes: evaluation holds every layer's activations at once, several times
the memory it needs under `no_grad()` (and runs out of it on large validation batches), and
runs slower. (A function only ever called
under `torch.no_grad()` is not flagged.)

## Example
```python
def evaluate(model, loader):
    model.eval()
    correct = 0
    for x, y in loader:
        correct += (model(x).argmax(1) == y).sum().item()
    return correct

def fit(model, train_loader, val_loader):
    print(evaluate(model, val_loader))
```

Use instead:
```python
import torch

@torch.no_grad()
def evaluate(model, loader):
    model.eval()
    correct = 0
    for x, y in loader:
        correct += (model(x).argmax(1) == y).sum().item()
    return correct

def fit(model, train_loader, val_loader):
    print(evaluate(model, val_loader))
```
""",
)
