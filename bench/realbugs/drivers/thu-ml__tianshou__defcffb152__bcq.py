"""Offline BCQ as test/offline/test_bcq.py sets it up (Pendulum, small networks), trained a few
updates on a replay buffer of random-policy Pendulum transitions (the user's offline data set)."""
import gymnasium as gym
import torch
from tianshou.data import Batch, ReplayBuffer
from tianshou.policy import BCQPolicy
from tianshou.utils.net.common import MLP, Net
from tianshou.utils.net.continuous import VAE, Critic, Perturbation
from tianshou.utils.torch_utils import policy_within_training_step

torch.manual_seed(0)
env = gym.make("Pendulum-v1")
state_dim, action_dim, max_action = 3, 1, 2.0

buf = ReplayBuffer(1000)
obs, _ = env.reset(seed=0)
for _ in range(400):
    act = env.action_space.sample()
    obs_next, rew, terminated, truncated, _ = env.step(act)
    buf.add(Batch(obs=obs, act=act, rew=rew, terminated=terminated, truncated=truncated, obs_next=obs_next, info={}))
    obs = env.reset()[0] if terminated or truncated else obs_next

actor = Perturbation(MLP(input_dim=state_dim + action_dim, output_dim=action_dim, hidden_sizes=[64]),
                     max_action=max_action, phi=0.05)
critic = Critic(Net(state_shape=(state_dim,), action_shape=(action_dim,), hidden_sizes=[64], concat=True))
vae = VAE(MLP(input_dim=state_dim + action_dim, hidden_sizes=[32, 32]),
          MLP(input_dim=state_dim + 2 * action_dim, output_dim=action_dim, hidden_sizes=[32, 32]),
          hidden_dim=32, latent_dim=2 * action_dim, max_action=max_action)
policy = BCQPolicy(actor_perturbation=actor, actor_perturbation_optim=torch.optim.Adam(actor.parameters(), lr=1e-3),
                   critic=critic, critic_optim=torch.optim.Adam(critic.parameters(), lr=1e-3),
                   vae=vae, vae_optim=torch.optim.Adam(vae.parameters()), action_space=env.action_space,
                   forward_sampled_times=10, num_sampled_action=10)
buf = policy.process_buffer(buf)  # as OfflineTrainer does before training
with policy_within_training_step(policy):
    for step in range(5):
        stats = policy.update(64, buf)
        print("update", step, "critic1 loss", stats.critic1_loss)
