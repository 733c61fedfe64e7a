"""TD176 loss-negated: the value a training step backpropagates is a loss with its sign
flipped (`loss = -criterion(out, y)`, `(-loss).backward()`), so the optimizer maximises it.

The walk keeps, for every name a function assigns, the *sign* of each loss-function term of
its value (`Term`): a call of a torch loss that is non-negative on valid inputs starts one at
+1, and unary minus, subtraction, `.neg()` and a negative constant factor flip it; `+`, a
positive constant factor, a division and `.mean()`-style calls keep it; anything else that
wraps a loss (a product with a variable, an unknown call) makes its sign unknown (0). Returns
of the file's functions are kept the same way, so `loss = -loss_function(recon, x)` is read
through `def loss_function`. A backward is flagged when every term of its value is at -1 and
the same loop iteration steps an optimizer over parameters (not a perturbation tensor).

Left alone: double negation (`elbo = -bce - kl; loss = -elbo`), a negative term beside a
positive loss (`ce - 0.1 * entropy_loss`), losses written by hand (`-log_prob * R`,
`-D(x).mean()`: no loss function), a sign flipped under an `if` (an option), ascent on an input
(PGD: no optimizer step in that loop, or one over `[delta]`), and the minimax GAN generator
objective `-BCE(D(G(z)), zeros)` = log(1 - D(G(z))).
"""

from __future__ import annotations

import ast
from typing import NamedTuple

from torchdoctor.core.wording import listing, shortened
from torchdoctor.linter.api import FILE_END, Context, Event, Scope, dotted, keyword, lint_check, literal, terminal
from torchdoctor.linter.steps import TRACKED, inside, reached, stepped_optimizer
from torchdoctor.rules.loss.loss_negated import RULE as LOSS_NEGATED

#: torch.nn.functional losses that are >= 0 on their valid inputs (verified on torch 2.13; not
#: poisson_nll_loss, gaussian_nll_loss or hinge_embedding_loss, which can be negative)
NON_NEGATIVE = frozenset({
    "cross_entropy", "nll_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits", "mse_loss", "l1_loss",
    "smooth_l1_loss", "huber_loss", "kl_div", "margin_ranking_loss", "soft_margin_loss", "multilabel_soft_margin_loss",
    "cosine_embedding_loss", "multi_margin_loss", "triplet_margin_loss", "triplet_margin_with_distance_loss",
    "multilabel_margin_loss", "ctc_loss",
})
#: the nn loss classes of those
NON_NEGATIVE_CLASSES = frozenset({
    "CrossEntropyLoss", "NLLLoss", "BCELoss", "BCEWithLogitsLoss", "MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss",
    "KLDivLoss", "MarginRankingLoss", "SoftMarginLoss", "MultiLabelSoftMarginLoss", "CosineEmbeddingLoss",
    "MultiMarginLoss", "TripletMarginLoss", "TripletMarginWithDistanceLoss", "MultiLabelMarginLoss", "CTCLoss",
})
_BINARY = frozenset({"binary_cross_entropy", "binary_cross_entropy_with_logits", "BCELoss", "BCEWithLogitsLoss"})
#: calls that keep the sign of the value they are called on
_KEEPS_SIGN = frozenset({"mean", "sum", "view", "reshape", "squeeze", "unsqueeze", "flatten", "float", "double", "half",
                         "bfloat16", "to", "cuda", "cpu", "contiguous", "clone", "type_as", "nanmean", "nansum"})
_TORCH_KEEPS_SIGN = frozenset({"torch.mean", "torch.sum", "torch.nanmean", "torch.nansum"})
_TORCH_NEG = frozenset({"torch.neg", "torch.negative"})
_ZEROS = frozenset({"torch.zeros", "torch.zeros_like"})


class Term(NamedTuple):
    """One loss-function term of a value: its net sign (+1, -1, or 0 when unknown), where its
    sign was last flipped (the fix goes there), and the loss's name."""

    sign: int
    site: ast.AST | None
    loss: str
    #: a BCE against zeros (fake labels): negated alone, it is the minimax GAN objective
    minimax: bool = False


Terms = tuple[Term, ...]
#: the rule reports a backward() of a negated loss: a file that never spells one is not read for it
_AT_BACKWARD = ("backward",)


@lint_check(LOSS_NEGATED, ast.Assign, needs_text=_AT_BACKWARD)
def assigned(node: ast.Assign, ctx: Context) -> None:
    terms = _terms(node.value, ctx)
    for target in node.targets:
        _bind(target, terms, ctx)


@lint_check(LOSS_NEGATED, ast.AnnAssign, needs_text=_AT_BACKWARD)
def annotated(node: ast.AnnAssign, ctx: Context) -> None:
    if node.value is not None:
        _bind(node.target, _terms(node.value, ctx), ctx)


@lint_check(LOSS_NEGATED, ast.AugAssign, needs_text=_AT_BACKWARD)
def augmented(node: ast.AugAssign, ctx: Context) -> None:
    if isinstance(node.target, ast.Name):
        value = ast.BinOp(left=node.target, op=node.op, right=node.value)
        ast.copy_location(value, node)
        _bind(node.target, _terms(value, ctx), ctx)


@lint_check(LOSS_NEGATED, ast.Return, needs_text=_AT_BACKWARD)
def returned(node: ast.Return, ctx: Context) -> None:
    if node.value is not None and ctx.function is not None:
        returns = ctx.memo.setdefault("TD176-returns", {})
        returns[id(ctx.scope)] = returns.get(id(ctx.scope), ()) + _terms(node.value, ctx)


@lint_check(LOSS_NEGATED, ast.Call, names={"backward", "manual_backward"}, needs_text=_AT_BACKWARD)
def backpropagated(node: ast.Call, ctx: Context) -> None:
    """`loss.backward()`, `accelerator.backward(loss)`: remember a backward of a negated loss."""
    terms: Terms = ()
    if isinstance(node.func, ast.Attribute):
        terms = _terms(node.func.value, ctx)
    if not terms and node.args:
        terms = _terms(node.args[0], ctx)
    if terms and all(term.sign == -1 for term in terms) and not all(term.minimax for term in terms):
        ctx.memo.setdefault("TD176-backwards", []).append((ctx.scope, node, terms))


@lint_check(LOSS_NEGATED, FILE_END, tracks=TRACKED, needs_text=_AT_BACKWARD)
def negated_loss_stepped(tree: ast.Module, ctx: Context) -> None:
    reported: set[int] = set()
    for scope, node, terms in ctx.memo.get("TD176-backwards", ()):
        backward = next((e for e in scope.events if e.node is node), None)
        if backward is None or not _steps_parameters(backward, scope.events, ctx):
            continue
        losses = listing(list(dict.fromkeys(f"`{t.loss}`" for t in terms)))
        for site in dict.fromkeys(t.site for t in terms):
            if site is None or site.lineno in reported:
                continue
            reported.add(site.lineno)
            ctx.report(LOSS_NEGATED, site, fields={"expression": shortened(ctx.text(site)), "losses": losses,
                                                   "line": node.lineno})


def _steps_parameters(backward: Event, events: list[Event], ctx: Context) -> bool:
    """The iteration that runs this backward also steps an optimizer over parameters (or
    updates them by hand: `for p in model.parameters(): p.data.add_(-lr * p.grad)`)."""
    loop = backward.loops[-1] if backward.loops else None
    for inner, caller in reached(events, ctx):
        if stepped_optimizer(inner) is None or (loop is not None and not inside(caller, loop)):
            continue
        if not _over_tensors(inner):
            return True
    return _updates_parameters_by_hand(loop if loop is not None else backward.scope.node if backward.scope else None)


def _updates_parameters_by_hand(region: ast.AST | None) -> bool:
    """A `for p in X.parameters():` loop in `region` whose body reads `.grad`."""
    for node in ast.walk(region) if region is not None else ():
        if (isinstance(node, ast.For) and isinstance(node.iter, ast.Call) and terminal(node.iter.func) == "parameters"
                and any(isinstance(n, ast.Attribute) and n.attr == "grad" for b in node.body for n in ast.walk(b))):
            return True
    return False


def _over_tensors(step: Event) -> bool:
    """An optimizer built over a list of plain tensors (`SGD([delta], ...)`: an input
    perturbation, an adversarial example), not over a model's parameters."""
    made = step.kind.node if step.kind is not None and step.kind.tag == "optimizer" else None
    given = made.args[0] if isinstance(made, ast.Call) and made.args else None
    return isinstance(given, (ast.List, ast.Tuple)) and bool(given.elts) and all(
        isinstance(e, (ast.Name, ast.Attribute)) for e in given.elts)


def _bind(target: ast.expr, terms: Terms, ctx: Context) -> None:
    names = ctx.memo.setdefault("TD176-names", {}).setdefault(id(ctx.scope), {})
    if isinstance(target, ast.Name):
        if ctx.conditions:  # assigned under an `if`: the value before it may reach the use too
            terms = names.get(target.id, ()) + terms
        names[target.id] = terms
        return
    for node in ast.walk(target):
        if isinstance(node, ast.Name):
            names[node.id] = ()


def _lookup(name: str, ctx: Context) -> Terms:
    table = ctx.memo.get("TD176-names", {})
    scope = ctx.scope
    own = table.get(id(scope), {})
    if name in own:
        return own[name]
    if scope is not ctx.module_scope and name not in scope.params:
        return table.get(id(ctx.module_scope), {}).get(name, ())
    return ()


def _flip(terms: Terms, site: ast.AST) -> Terms:
    return tuple(t._replace(sign=-t.sign, site=site) if t.sign else t for t in terms)


def _unknown(terms: Terms) -> Terms:
    return tuple(t._replace(sign=0) for t in terms)


def _terms(node: ast.expr, ctx: Context) -> Terms:
    """The loss-function terms of `node`'s value, each with its sign."""
    if isinstance(node, ast.Name):
        return _lookup(node.id, ctx)
    if isinstance(node, ast.UnaryOp):
        inner = _terms(node.operand, ctx)
        return _flip(inner, node) if isinstance(node.op, ast.USub) else inner if isinstance(node.op, ast.UAdd) else ()
    if isinstance(node, ast.BinOp):
        return _binary(node, ctx)
    if isinstance(node, ast.Call):
        return _call(node, ctx)
    if isinstance(node, ast.Subscript):
        return _terms(node.value, ctx)
    if isinstance(node, ast.IfExp):
        return _terms(node.body, ctx) + _terms(node.orelse, ctx)
    return ()


def _binary(node: ast.BinOp, ctx: Context) -> Terms:
    left, right = _terms(node.left, ctx), _terms(node.right, ctx)
    op = node.op
    if isinstance(op, ast.Add):
        return left + right
    if isinstance(op, ast.Sub):
        return left + _flip(right, node)
    if isinstance(op, ast.Mult):
        for terms, factor in ((left, node.right), (right, node.left)):
            value = literal(factor)
            if terms and isinstance(value, (int, float)) and not isinstance(value, bool):
                return _flip(terms, node) if value < 0 else terms if value > 0 else ()
        return _unknown(left + right)
    if isinstance(op, ast.Div):
        value = literal(node.right)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0:
            return _flip(left, node)
        return left + _unknown(right)  # divided by a count, a temperature, accumulation steps
    return _unknown(left + right)


def _call(node: ast.Call, ctx: Context) -> Terms:
    func = node.func
    qualified = ctx.qualified(func)
    if qualified is not None:
        head, _, last = qualified.rpartition(".")
        if head == "torch.nn.functional" and last in NON_NEGATIVE:
            return (_loss_term(node, last, ctx),)
        if qualified in _TORCH_KEEPS_SIGN and node.args:
            return _terms(node.args[0], ctx)
        if qualified in _TORCH_NEG and node.args:
            return _flip(_terms(node.args[0], ctx), node)
    else:
        kind = ctx.kind(func)
        if kind is not None and kind.tag == "loss_fn" and kind.detail in NON_NEGATIVE_CLASSES:
            return (_loss_term(node, kind.detail, ctx),)
        if isinstance(func, ast.Attribute):
            if func.attr in _KEEPS_SIGN:
                return _terms(func.value, ctx)
            if func.attr == "neg":
                return _flip(_terms(func.value, ctx), node)
            if func.attr == "scale" and len(node.args) == 1:  # `scaler.scale(loss)`
                return _terms(node.args[0], ctx)
        returns = ctx.memo.get("TD176-returns", {})
        for scope in _callees(func, ctx):
            if id(scope) in returns:
                return returns[id(scope)]
    inner = tuple(t for arg in node.args if not isinstance(arg, ast.Starred) for t in _terms(arg, ctx))
    return _unknown(inner)


def _callees(func: ast.expr, ctx: Context) -> list[Scope]:
    """The function (or `self.` method) of this file a call runs, when it is one."""
    if isinstance(func, ast.Name) and func.id in ctx.functions:
        return [ctx.functions[func.id]]
    if (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self"
            and ctx.class_info is not None):
        method = ctx.methods.get((id(ctx.class_info), func.attr))
        return [method] if method is not None else []
    return []


def _loss_term(call: ast.Call, loss: str, ctx: Context) -> Term:
    """A loss call: +1, marked when it is a BCE against zeros: negated alone, that is the
    minimax GAN objective -BCE(D(G(z)), zeros) = log(1 - D(G(z))), whose negation is the point."""
    name = loss if loss[:1].isupper() else f"F.{loss}"
    target = call.args[1] if len(call.args) > 1 else keyword(call, "target")
    return Term(1, None, name, loss in _BINARY and target is not None and _zeros(target, ctx))


def _zeros(node: ast.expr, ctx: Context) -> bool:
    """Fake labels: `torch.zeros(...)`, `x.new_zeros(...)`, or a name that says so."""
    if isinstance(node, ast.Call):
        return ctx.qualified(node.func) in _ZEROS or terminal(node.func) in ("new_zeros", "zeros_like")
    name = dotted(node)
    last = name.rpartition(".")[2].lower() if name else ""
    return "fake" in last or "zero" in last

