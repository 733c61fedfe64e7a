"""TD101 / TD102 / TD103 / TD109 / TD119: a loss that wants logits (or log-probabilities) gets
probabilities (TD119: sigmoid outputs into CrossEntropyLoss; TD109 also: KLDivLoss's target given as log-probabilities without
`log_target=True`); TD108: BCELoss, which wants probabilities, gets a model's raw scores.

The loss is recognised by what made it (`nn.CrossEntropyLoss()`, `F.cross_entropy`, a
variable or `self.` attribute holding a loss module); its input by data flow: a softmax or
sigmoid call, a variable assigned one, or the output of a model whose last layer (or whose
`forward`'s every return) is one.
"""

from __future__ import annotations

import ast

from torchdoctor.core.rule import Rule
from torchdoctor.core.wording import shortened
from torchdoctor.linter.api import Context, Kind, keyword, lint_check, literal, terminal
from torchdoctor.rules.loss.logits_into_bce_loss import RULE as LOGITS_INTO_BCE_LOSS
from torchdoctor.rules.loss.probabilities_into_kl_div import RULE as PROBABILITIES_INTO_KL_DIV
from torchdoctor.rules.loss.probabilities_into_kl_div import WRONG_INPUT, WRONG_TARGET
from torchdoctor.rules.loss.sigmoid_before_bce_with_logits import RULE as SIGMOID_BEFORE_BCE_WITH_LOGITS
from torchdoctor.rules.loss.sigmoid_before_cross_entropy import RULE as SIGMOID_BEFORE_CROSS_ENTROPY
from torchdoctor.rules.loss.softmax_before_cross_entropy import RULE as SOFTMAX_BEFORE_CROSS_ENTROPY
from torchdoctor.rules.loss.softmax_into_nll_loss import RULE as SOFTMAX_INTO_NLL_LOSS

#: loss -> (rule, the kind of input that is wrong for it)
_FUNCTIONAL = {
    "torch.nn.functional.cross_entropy": ("CrossEntropyLoss", SOFTMAX_BEFORE_CROSS_ENTROPY, "probs"),
    "torch.nn.functional.nll_loss": ("NLLLoss", SOFTMAX_INTO_NLL_LOSS, "probs"),
    "torch.nn.functional.binary_cross_entropy_with_logits": ("BCEWithLogitsLoss", SIGMOID_BEFORE_BCE_WITH_LOGITS, "sigmoid"),
    "torch.nn.functional.binary_cross_entropy": ("BCELoss", LOGITS_INTO_BCE_LOSS, "logits"),
    "torch.nn.functional.kl_div": ("KLDivLoss", PROBABILITIES_INTO_KL_DIV, "probs"),
}
_MODULES = {
    "CrossEntropyLoss": (SOFTMAX_BEFORE_CROSS_ENTROPY, "probs"),
    "NLLLoss": (SOFTMAX_INTO_NLL_LOSS, "probs"),
    "BCEWithLogitsLoss": (SIGMOID_BEFORE_BCE_WITH_LOGITS, "sigmoid"),
    "BCELoss": (LOGITS_INTO_BCE_LOSS, "logits"),
    "KLDivLoss": (PROBABILITIES_INTO_KL_DIV, "probs"),
}
#: a second wrong input for the same loss: loss name -> (rule, kind)
_ALSO = {"CrossEntropyLoss": (SIGMOID_BEFORE_CROSS_ENTROPY, "sigmoid")}
#: last layers whose output is a raw score of any sign
_SCORE_LAYERS = ("Linear", "Bilinear", "LazyLinear", "Conv1d", "Conv2d", "Conv3d")


@lint_check((SOFTMAX_BEFORE_CROSS_ENTROPY, SIGMOID_BEFORE_BCE_WITH_LOGITS, SOFTMAX_INTO_NLL_LOSS, LOGITS_INTO_BCE_LOSS, PROBABILITIES_INTO_KL_DIV, SIGMOID_BEFORE_CROSS_ENTROPY), ast.Call)
def loss_input_is_probabilities(node: ast.Call, ctx: Context) -> None:
    loss = _loss(node, ctx)
    if loss is None or not node.args or isinstance(node.args[0], ast.Starred):
        return
    rule, wrong = loss[1], loss[2]
    extra = {"wrong": WRONG_INPUT} if rule is PROBABILITIES_INTO_KL_DIV else {}
    if rule is PROBABILITIES_INTO_KL_DIV:
        _log_target_as_probabilities(node, ctx)
    if wrong == "logits":
        _scores_into_bce(node.args[0], ctx)
        return
    source = ctx.kind(node.args[0])
    if source is None or source.node is None:
        return
    if source.tag != wrong:
        rule, wrong = _ALSO.get(loss[0], (rule, ""))
        if source.tag != wrong:
            return
    site = _model_site(source)
    if site is None:
        ctx.report(rule, node.args[0], fields={"source": describe(source, ctx), **extra})
        return
    # The model itself ends in the softmax/sigmoid: the line to change is that layer (as `check`
    # and `run` report it); several losses fed by one model give one finding there.
    reported = ctx.memo.setdefault("loss_inputs", set())
    if (rule.code, site.lineno) in reported:
        return
    reported.add((rule.code, site.lineno))
    ctx.report(rule, site, fields={"source": f"{describe(source, ctx)} (the loss is computed at line {node.lineno})",
                                   **extra})


def _log_target_as_probabilities(node: ast.Call, ctx: Context) -> None:
    """`F.kl_div(log_p, F.log_softmax(t))` without `log_target=True` (on the call, or on the
    `nn.KLDivLoss(...)` that made the loss module)."""
    target = node.args[1] if len(node.args) > 1 else keyword(node, "target")
    source = ctx.kind(target) if target is not None else None
    if target is None or source is None or source.tag != "log_probs":
        return
    made = ctx.kind(node.func)
    for call, positional in ((node, 2), (made.node if made is not None else None, 3)):
        if not isinstance(call, ast.Call):
            continue
        value = keyword(call, "log_target")
        if len(call.args) > positional or (value is not None and literal(value) is not False):
            return  # log_target=True, or a value the file does not show
    ctx.report(PROBABILITIES_INTO_KL_DIV, target, fields={"wrong": WRONG_TARGET, "source": describe(source, ctx)})


def _scores_into_bce(value: ast.expr, ctx: Context) -> None:
    """`BCELoss()(model(x), y)` where `model` is an `nn.Sequential` whose last layer is a
    Linear/Conv: raw scores, which BCELoss rejects as soon as one is outside [0, 1]."""
    output = ctx.kind(value)
    call = output.node if output is not None and output.tag == "output" else None
    model = ctx.kind(call.func) if isinstance(call, ast.Call) else None
    made = model.node if model is not None and model.tag == "model" else None
    if not isinstance(made, ast.Call) or ctx.qualified(made.func) != "torch.nn.Sequential" or not made.args:
        return
    last = made.args[-1]
    qualified = ctx.qualified(last.func) if isinstance(last, ast.Call) else None
    if qualified is None or qualified.rpartition(".")[0] != "torch.nn" or qualified.rpartition(".")[2] not in _SCORE_LAYERS:
        return
    ctx.report(LOGITS_INTO_BCE_LOSS, value,
               fields={"values": f"the output of a model whose last layer is `{shortened(ctx.text(last), 48, '...)')}` (line {last.lineno})"})


def _model_site(kind: Kind) -> ast.expr | None:
    """The softmax/sigmoid a model's output comes from, when the value is a model's output.

    For an `nn.Sequential`, its last layer (the `nn.Softmax(...)` element); for a model class,
    the call its `forward()` returns.
    """
    node = kind.node
    if kind.detail != "model" or not isinstance(node, ast.Call):
        return None
    if terminal(node.func) == "Sequential":
        last = node.args[-1] if node.args else None
        return last if isinstance(last, ast.Call) else None
    return node


def _loss(node: ast.Call, ctx: Context) -> tuple[str, Rule, str] | None:
    func = node.func
    name = terminal(func)
    if name in ("cross_entropy", "nll_loss", "binary_cross_entropy_with_logits", "binary_cross_entropy", "kl_div"):
        qualified = ctx.qualified(func)
        return _FUNCTIONAL.get(qualified) if qualified else None
    kind = ctx.kind(func)
    if kind is None or kind.tag != "loss_fn" or kind.detail not in _MODULES:
        return None
    return (kind.detail, *_MODULES[kind.detail])


def describe(kind: Kind, ctx: Context) -> str:
    """Where the probabilities come from, in words: "`F.softmax(...)` at line 12"."""
    node = kind.node
    line = getattr(node, "lineno", "?")
    what = {"probs": "softmax", "sigmoid": "sigmoid", "log_probs": "log_softmax"}.get(kind.tag, kind.tag)
    if kind.detail == "model" and isinstance(node, ast.Call) and terminal(node.func) == "Sequential":
        return f"the model built at line {line}, whose last layer is a {what}"
    text = shortened(ctx.text(node), 48, "...)") if node is not None else what
    if kind.detail == "model":  # reported at that call: its line would be said twice
        return f"`{text}`, which the model's forward() returns"
    return f"`{text}` at line {line}"

