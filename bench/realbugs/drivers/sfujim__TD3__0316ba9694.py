"""Trains the repository's DDPG agent for a few iterations on a replay buffer of random transitions
(state_dim 3, action_dim 1, as a Pendulum-like environment would give); no gym environment is needed."""
import DDPG
import numpy as np
import utils

np.random.seed(0)
state_dim, action_dim, max_action = 3, 1, 2.0
policy = DDPG.DDPG(state_dim, action_dim, max_action)
buffer = utils.ReplayBuffer()
for _ in range(200):
    s, s2 = np.random.randn(state_dim), np.random.randn(state_dim)
    a = np.random.uniform(-max_action, max_action, action_dim)
    buffer.add((s, s2, a, np.array(np.random.randn()), np.array(0.0)))
policy.select_action(np.random.randn(state_dim))
policy.train(buffer, 5, batch_size=32)
print("trained")
