"""Runs REINFORCE.py's main() (what `python REINFORCE.py` does) on CartPole for 40 episodes instead
of 10000, printing how many steps each episode took."""
import gym
import numpy as np

np.bool8 = np.bool_  # gym 0.25's env checker uses this alias, gone in numpy 2


class Enough(Exception):
    pass


_make = gym.make


def make(*args, **kwargs):  # the same environment, stopped after a few episodes
    env = _make(*args, **kwargs)
    reset, step, seen = env.reset, env.step, {"episodes": 0, "steps": 0}

    def counted_reset(*a, **k):
        if seen["episodes"]:
            print("episode", seen["episodes"], "took", seen["steps"], "steps")
        if seen["episodes"] == 40:
            raise Enough
        seen["episodes"] += 1
        seen["steps"] = 0
        return reset(*a, **k)

    def counted_step(*a, **k):
        seen["steps"] += 1
        return step(*a, **k)

    env.reset, env.step = counted_reset, counted_step
    return env


gym.make = make
import REINFORCE  # noqa: E402

try:
    REINFORCE.main()
except Enough:
    pass
