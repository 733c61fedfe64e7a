"""TD107 for a softmax over a batch of one (every probability 1, no gradient), on both sides."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.distributions import Categorical

from tests.observe.detectors.conftest import line_of, observing
from torchdoctor.observe.detectors.batch_of_one import SoftmaxOverBatchOfOne

HERE = __file__


class Policy(nn.Module):
    def __init__(self, dim: int, log: bool = False) -> None:
        super().__init__()
        self.body, self.head, self.dim, self.log = nn.Linear(4, 16), nn.Linear(16, 3), dim, log

    def forward(self, state: torch.Tensor) -> torch.Tensor:
        scores = self.head(torch.relu(self.body(state)))
        if self.log:
            return F.log_softmax(scores, dim=self.dim)  # the log-softmax
        return F.softmax(scores, dim=self.dim)  # the softmax


def play(policy: Policy, episodes: int = 4, state_shape: tuple[int, ...] = (1, 4)) -> None:
    """REINFORCE, one state at a time: no loss function ever sees the probabilities."""
    optimizer = torch.optim.Adam(policy.parameters(), lr=1e-2)
    for _ in range(episodes):
        log_probs, rewards = [], []
        for _ in range(6):
            out = policy(torch.randn(state_shape))
            dist = Categorical(logits=out) if policy.log else Categorical(probs=out)
            action = dist.sample()
            log_probs.append(dist.log_prob(action).reshape(1))
            rewards.append(float(action.item() == 1))
        returns = torch.tensor(rewards) - 0.5
        loss = -(torch.cat(log_probs) * returns).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def test_softmax_over_a_batch_of_one_state_is_flagged_at_the_softmax() -> None:
    with observing(SoftmaxOverBatchOfOne) as observed:
        play(Policy(dim=0))
    finding = observed.one("TD107")
    assert finding.line == line_of(HERE, "# the softmax")
    assert "dim 0 of a [1, 3] tensor, a batch of one" in finding.message and "every probability is 1" in finding.message


def test_log_softmax_over_a_batch_of_one_is_flagged_too() -> None:
    with observing(SoftmaxOverBatchOfOne) as observed:
        play(Policy(dim=0, log=True))
    finding = observed.one("TD107")
    assert finding.line == line_of(HERE, "# the log-softmax") and "every log-probability is 0" in finding.message


def test_softmax_over_the_actions_is_not_flagged() -> None:
    with observing(SoftmaxOverBatchOfOne) as observed:
        play(Policy(dim=-1))
    assert observed.codes == set()


def test_softmax_over_dim_0_of_one_unbatched_state_is_over_the_actions() -> None:
    """A 1-D state gives 1-D scores: dim 0 is the actions (actor-critic examples do this)."""
    with observing(SoftmaxOverBatchOfOne) as observed:
        play(Policy(dim=0), state_shape=(4,))
    assert observed.codes == set()


def test_a_time_first_batch_that_is_one_step_long_once_is_not_flagged() -> None:
    """Attention over time in (time, batch, features) layout: a sequence of one step gives a
    constant softmax for that batch only, which is no bug in the code."""
    encoder, head = nn.Linear(4, 8), nn.Linear(8, 3)
    optimizer = torch.optim.SGD([*encoder.parameters(), *head.parameters()], lr=0.1)
    with observing(SoftmaxOverBatchOfOne) as observed:
        for steps in (1, 5, 7, 4):
            hidden = torch.tanh(encoder(torch.randn(steps, 6, 4)))
            weights = F.softmax(hidden.sum(-1), dim=0)  # over time
            pooled = (weights.unsqueeze(-1) * hidden).sum(0)
            loss = F.cross_entropy(head(pooled), torch.randint(0, 3, (6,)))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    assert observed.codes == set()


def test_looking_at_the_graph_unpacks_no_saved_tensor() -> None:
    """Saved-tensor hooks (activation checkpointing, offloading) run only when backward() runs:
    the search reads shapes from the graph's metadata, never a saved output."""

    def unpacks() -> int:
        count = [0]

        def unpack(tensor: torch.Tensor) -> torch.Tensor:
            count[0] += 1
            return tensor

        with torch.autograd.graph.saved_tensors_hooks(lambda tensor: tensor, unpack):
            play(Policy(dim=0), episodes=3)
        return count[0]

    plain = unpacks()
    with observing(SoftmaxOverBatchOfOne):
        observed = unpacks()
    assert plain > 0 and observed == plain
