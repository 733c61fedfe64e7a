"""Runs ddpg.py's main() (what `python ddpg.py` does) for 12 Pendulum episodes instead of 10000:
training starts once the buffer holds 2000 transitions (after 10 episodes of 200 steps)."""
import gym
import numpy as np

np.bool8 = np.bool_  # gym 0.25's env checker uses this alias, gone in numpy 2
# The script asks for Pendulum-v0, which gym renamed Pendulum-v1 (same environment) in 0.21.
gym.envs.registration.register(id="Pendulum-v0", entry_point="gym.envs.classic_control.pendulum:PendulumEnv",
                               max_episode_steps=200)


class Enough(Exception):
    pass


_make = gym.make


def make(*args, **kwargs):  # the same environment, stopped after a few episodes
    env = _make(*args, **kwargs)
    reset, seen = env.reset, {"episodes": 0}

    def counted_reset(*a, **k):
        if seen["episodes"] == 12:
            raise Enough
        seen["episodes"] += 1
        return reset(*a, **k)

    env.reset = counted_reset
    return env


gym.make = make
import ddpg  # noqa: E402

try:
    ddpg.main()
except Enough:
    print("12 episodes done")
