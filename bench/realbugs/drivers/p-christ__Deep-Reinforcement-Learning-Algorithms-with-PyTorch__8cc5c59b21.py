"""Trains the repository's SAC agent on gym's Pendulum-v1 for two episodes, with the hyperparameters
of results/Mountain_Car.py scaled down (small buffer and batch, learning after 50 steps), on the CPU."""
import gym
import numpy as np

np.bool8 = np.bool_  # gym 0.25 predates NumPy 2

from agents.actor_critic_agents.SAC import SAC
from utilities.data_structures.Config import Config

config = Config()
config.seed = 1
config.environment = gym.make("Pendulum-v1")
# the agent reads two attributes that gym 0.10 environments carried and today's gym no longer has
config.environment.unwrapped.trials = 10
config.environment.unwrapped.reward_threshold = -150.0
config.num_episodes_to_run = 2
config.visualise_individual_results = False
config.use_GPU = False
net = {"learning_rate": 0.003, "linear_hidden_units": [20, 20], "final_layer_activation": None,
       "batch_norm": False, "tau": 0.005, "gradient_clipping_norm": 5, "initialiser": "Xavier"}
config.hyperparameters = {
    "Actor": dict(net), "Critic": dict(net, buffer_size=10000),
    "min_steps_before_learning": 50, "batch_size": 32, "discount_rate": 0.99, "mu": 0.0, "theta": 0.15,
    "sigma": 0.25, "update_every_n_steps": 20, "learning_updates_per_learning_session": 5,
    "automatically_tune_entropy_hyperparameter": True, "entropy_term_weight": None, "add_extra_noise": True,
    "do_evaluation_iterations": True, "clip_rewards": False,
}
agent = SAC(config)
scores, rolling, seconds = agent.run_n_episodes()
print("episode scores", scores)
