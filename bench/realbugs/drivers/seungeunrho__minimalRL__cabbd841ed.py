"""Runs actor_critic.py's main() (what `python actor_critic.py` does) for 20 CartPole episodes
instead of 10000, then shows the batch make_batch() builds from one 5-step rollout."""
import gym
import numpy as np
import torch

np.bool8 = np.bool_  # gym 0.25's env checker uses this alias, gone in numpy 2


class Enough(Exception):
    pass


_make = gym.make


def make(*args, **kwargs):  # the same environment, stopped after a few episodes
    env = _make(*args, **kwargs)
    reset, seen = env.reset, {"episodes": 0}

    def counted_reset(*a, **k):
        if seen["episodes"] == 20:
            raise Enough
        seen["episodes"] += 1
        return reset(*a, **k)

    env.reset = counted_reset
    return env


gym.make = make
import actor_critic  # noqa: E402

try:
    actor_critic.main()
except Enough:
    pass

model, env = actor_critic.ActorCritic(), gym.make("CartPole-v1")
s = env.reset()
for t in range(5):
    a = torch.distributions.Categorical(model.pi(torch.from_numpy(s).float())).sample().item()
    s_prime, r, done, info = env.step(a)
    model.put_data((s, a, r, s_prime, done))
    s = s_prime
s, a, r, s_prime, done = model.make_batch()
print("states", tuple(s.shape), "next states", tuple(s_prime.shape), "values of next states", tuple(model.v(s_prime).shape))
