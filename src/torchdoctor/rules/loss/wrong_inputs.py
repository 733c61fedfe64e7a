"""Which producer of a loss's input is wrong for which loss: read by `check` (from its traced
forward) and `run` (from the input's autograd node), so both name the same rule.

Keys are (the `torch.nn.functional` loss, the op that made its input: "softmax",
"log_softmax" or "sigmoid").
"""

from torchdoctor.core.rule import Rule
from torchdoctor.rules.loss.sigmoid_before_bce_with_logits import RULE as SIGMOID_BCE
from torchdoctor.rules.loss.sigmoid_before_cross_entropy import RULE as SIGMOID_CE
from torchdoctor.rules.loss.softmax_before_cross_entropy import RULE as SOFTMAX_CE
from torchdoctor.rules.loss.softmax_into_nll_loss import RULE as SOFTMAX_NLL

WRONG_PRODUCERS: dict[tuple[str, str], Rule] = {
    ("cross_entropy", "softmax"): SOFTMAX_CE,
    ("cross_entropy", "sigmoid"): SIGMOID_CE,
    ("binary_cross_entropy_with_logits", "sigmoid"): SIGMOID_BCE,
    ("nll_loss", "softmax"): SOFTMAX_NLL,
}
