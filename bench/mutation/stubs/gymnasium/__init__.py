"""A stand-in for gymnasium's CartPole-v1 (the classic dynamics, in plain Python), for the
mutation bench only: the reinforcement-learning examples run unedited without the package.
Episodes are capped at TD_MUTATION_EPISODE_STEPS (default 200) steps."""

import math
import os
import random

import numpy as np


class _Space:
    def __init__(self, n=None, shape=None):
        self.n = n
        self.shape = shape


class _Spec:
    """CartPole's reward threshold, which the examples train until they pass: after
    TD_MUTATION_EPISODES episodes (default 40) it drops below any reward, so they stop."""

    def __init__(self, env):
        self._env = env

    @property
    def reward_threshold(self):
        done = self._env.episodes >= int(os.environ.get("TD_MUTATION_EPISODES", "40"))
        return -1.0 if done else 475.0


class CartPole:
    def __init__(self):
        self.observation_space = _Space(shape=(4,))
        self.action_space = _Space(n=2)
        self.spec = _Spec(self)
        self.episodes = 0
        self._rng = random.Random(0)
        self._state = None
        self._t = 0
        self._cap = int(os.environ.get("TD_MUTATION_EPISODE_STEPS", "200"))

    def reset(self, seed=None, options=None):
        if seed is not None:
            self._rng = random.Random(seed)
        self._state = [self._rng.uniform(-0.05, 0.05) for _ in range(4)]
        self._t = 0
        self.episodes += 1
        return np.array(self._state, dtype=np.float32), {}

    def step(self, action):
        x, x_dot, theta, theta_dot = self._state
        force = 10.0 if int(action) == 1 else -10.0
        cos, sin = math.cos(theta), math.sin(theta)
        temp = (force + 0.05 * theta_dot ** 2 * sin) / 1.1
        theta_acc = (9.8 * sin - cos * temp) / (0.5 * (4.0 / 3.0 - 0.1 * cos ** 2 / 1.1))
        x_acc = temp - 0.05 * theta_acc * cos / 1.1
        x, x_dot = x + 0.02 * x_dot, x_dot + 0.02 * x_acc
        theta, theta_dot = theta + 0.02 * theta_dot, theta_dot + 0.02 * theta_acc
        self._state = [x, x_dot, theta, theta_dot]
        self._t += 1
        terminated = abs(x) > 2.4 or abs(theta) > 12 * 2 * math.pi / 360
        truncated = self._t >= self._cap
        return np.array(self._state, dtype=np.float32), 1.0, terminated, truncated, {}

    def render(self):
        return None

    def close(self):
        return None


def make(name, **_):
    return CartPole()
