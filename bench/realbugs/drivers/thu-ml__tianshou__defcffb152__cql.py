"""Offline CQL as test/offline/test_cql.py sets it up (Pendulum, small networks, auto alpha),
trained a few updates on a replay buffer of random-policy Pendulum transitions (the user's
offline data set)."""
import gymnasium as gym
import torch
from tianshou.data import Batch, ReplayBuffer
from tianshou.policy import CQLPolicy
from tianshou.utils.net.common import Net
from tianshou.utils.net.continuous import ActorProb, Critic
from tianshou.utils.torch_utils import policy_within_training_step

torch.manual_seed(0)
env = gym.make("Pendulum-v1")

buf = ReplayBuffer(1000)
obs, _ = env.reset(seed=0)
for _ in range(400):
    act = env.action_space.sample()
    obs_next, rew, terminated, truncated, _ = env.step(act)
    buf.add(Batch(obs=obs, act=act, rew=rew, terminated=terminated, truncated=truncated, obs_next=obs_next, info={}))
    obs = env.reset()[0] if terminated or truncated else obs_next

actor = ActorProb(Net(state_shape=(3,), action_shape=(1,), hidden_sizes=[64]), action_shape=(1,),
                  unbounded=True, conditioned_sigma=True)
critic = Critic(Net(state_shape=(3,), action_shape=(1,), hidden_sizes=[64], concat=True))
log_alpha = torch.zeros(1, requires_grad=True)
policy = CQLPolicy(actor=actor, actor_optim=torch.optim.Adam(actor.parameters(), lr=1e-3),
                   critic=critic, critic_optim=torch.optim.Adam(critic.parameters(), lr=1e-3),
                   action_scaling=False, action_space=env.action_space,
                   alpha=(-1.0, log_alpha, torch.optim.Adam([log_alpha], lr=3e-4)),
                   min_action=-2.0, max_action=2.0)
buf = policy.process_buffer(buf)  # as OfflineTrainer does before training
with policy_within_training_step(policy):
    for step in range(5):
        stats = policy.update(64, buf)
        print("update", step, "critic1 loss", stats.critic1_loss)
