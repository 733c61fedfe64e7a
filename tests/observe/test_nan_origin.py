"""Where a NaN/Inf is born: the first aten op with finite inputs and a non-finite output, what
its inputs show, and for gradients the forward op whose backward made it (verified on torch)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from torchdoctor.observe.nan_origin import Culprit, FirstNonFinite, cause_of
from torchdoctor.rules.numerics.non_finite_values import RULE

HALF_BIG = torch.tensor([300.0, 1.0], dtype=torch.float16)


def forward_culprit(compute: Callable[[], torch.Tensor]) -> Culprit:
    finder = FirstNonFinite()
    with torch.no_grad(), finder:
        compute()
    assert finder.culprit is not None
    return finder.culprit


def worded(culprit: Culprit) -> tuple[str, str]:
    """The cause and the fix, in TD145's words (the message from the op on)."""
    cause = cause_of(culprit)
    finding = RULE.finding(fields={"what": "x", "op": culprit.forward_op or culprit.op, **cause.facts}, variant=cause.variant)
    return finding.message.partition(" on this line: ")[2], finding.hint


def backward_culprit(compute: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor) -> Culprit:
    x = x.clone().requires_grad_(True)
    with torch.autograd.set_detect_anomaly(True, check_nan=False):
        out = compute(x).sum()  # the forward line
    finder = FirstNonFinite()
    with finder:
        torch.autograd.grad(out, [x])
    assert finder.culprit is not None
    return finder.culprit


@pytest.mark.parametrize(
    "compute, op, says, fix",
    [
        (lambda: torch.log(torch.tensor([0.0, 1.0])), "log", "`log` of 0 gives -inf (1 zero(s)", "clamp_min"),
        (lambda: torch.log(torch.tensor([-1.0, 1.0])), "log", "`log` of 1 negative number(s) gives NaN", "log_softmax"),
        (lambda: torch.sqrt(torch.tensor([-4.0, 4.0])), "sqrt", "`sqrt` of 1 negative number(s) gives NaN", "clamp_min(0)"),
        (lambda: torch.exp(torch.tensor([89.0, 1.0])), "exp", "`exp` overflows float32 above 88.7", "logsumexp"),
        (lambda: torch.tensor([1.0, 2.0]) / torch.tensor([0.0, 1.0]), "div", "a division by 0", "clamp_min(1e-8)"),
        (lambda: torch.pow(torch.tensor([-8.0, 8.0]), 0.5), "pow", "negative base(s) to a fractional exponent", "abs()"),
        (lambda: torch.softmax(torch.full((2, 3), float("-inf")), dim=1), "_softmax", "entirely -inf", "masked_fill"),
        (lambda: torch.acos(torch.tensor([1.5, 0.0])), "acos", "defined on [-1, 1] only", "clamp"),
        (lambda: HALF_BIG * HALF_BIG, "mul", "overflows float16 (largest finite value 65504", "bfloat16"),
    ],
    ids=["log-of-zero", "log-of-negative", "sqrt-of-negative", "exp-overflow", "division-by-zero", "pow-of-negative",
         "softmax-of-masked-row", "acos-out-of-domain", "float16-overflow"],
)
def test_a_forward_origin_is_named_with_what_its_inputs_show(compute: Callable[[], torch.Tensor], op: str, says: str, fix: str) -> None:
    culprit = forward_culprit(compute)
    assert culprit.op == op and culprit.backward_of is None
    cause, remedy = worded(culprit)
    assert says in cause and fix in remedy


def test_the_op_is_found_at_the_users_line() -> None:
    def step() -> torch.Tensor:
        h = torch.tensor([1.0, 2.0]) * 2
        return torch.log(h - 2.0)  # the culprit

    culprit = forward_culprit(step)
    assert culprit.location is not None and culprit.location[0] == __file__
    assert "the culprit" in open(__file__).read().splitlines()[culprit.location[1] - 1]


@pytest.mark.parametrize(
    "compute, x, forward, says",
    [
        (torch.sqrt, torch.tensor([0.0, 4.0]), "sqrt", "the gradient of `sqrt` is infinite at 0"),
        (torch.acos, torch.tensor([1.0, 0.0]), "acos", "the gradient of `acos` is infinite at -1 and 1"),
        (lambda x: x ** 0.5, torch.tensor([0.0, 4.0]), "pow", "the gradient of `pow` with an exponent below 1"),
        (torch.log, torch.tensor([0.0, 1.0]) + 1e-45, "log", None),
    ],
    ids=["sqrt-at-zero", "acos-at-one", "pow-at-zero", "log-near-zero"],
)
def test_a_gradient_origin_names_the_forward_op_and_line(compute, x, forward: str, says: str | None) -> None:  # type: ignore[no-untyped-def]
    culprit = backward_culprit(compute, x)
    assert culprit.forward_op == forward
    line = open(__file__).read().splitlines()[culprit.location[1] - 1] if culprit.location else ""
    assert "the forward line" in line or "x ** 0.5" in line  # the lambda itself, for the one defined inline
    if says is not None:
        assert says in worded(culprit)[0]


def test_finite_computations_have_no_culprit() -> None:
    finder = FirstNonFinite()
    with torch.no_grad(), finder:
        torch.log(torch.tensor([0.5, 1.0])) + torch.sqrt(torch.tensor([4.0]))
        torch.softmax(torch.tensor([[float("-inf"), 0.0]]), dim=1)  # a partly masked row is fine
    assert finder.culprit is None
