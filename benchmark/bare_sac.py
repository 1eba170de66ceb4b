"""A bare PyTorch SAC update on Hopper-v5 shapes: the speed limit for ``benchmark/train.py``.

Nothing here is tianshou: plain tensors, ``nn.Sequential`` networks and torch's fastest Adam
(the fused kernel), doing exactly the work one SAC gradient step needs (a minibatch gather from
preallocated tensors, the soft TD target, two critic steps, an actor step, an entropy-coefficient
step and Polyak averaging of the target critics).
"""

import copy

import torch

from benchmark.common import adam, mlp, squashed_gaussian_sample

OBS_DIM = 11
ACT_DIM = 3
HIDDEN = 256
BATCH = 256
GAMMA = 0.99
TAU = 0.005
LR = 1e-3


class BareSAC:
    """One SAC learner with its own replay tensors; :meth:`update` is one gradient step."""

    def __init__(self, buffer_size: int = 100_000) -> None:
        self.actor = mlp(OBS_DIM, HIDDEN, HIDDEN, 2 * ACT_DIM)
        self.critics = [mlp(OBS_DIM + ACT_DIM, HIDDEN, HIDDEN, 1) for _ in range(2)]
        self.targets = [copy.deepcopy(c).eval() for c in self.critics]
        self.log_alpha = torch.zeros(1, requires_grad=True)
        self.actor_optim = adam(list(self.actor.parameters()), LR)
        self.critic_optims = [adam(list(c.parameters()), LR) for c in self.critics]
        self.alpha_optim = adam([self.log_alpha], 3e-4)
        self.target_entropy = -float(ACT_DIM)
        self.obs = torch.randn(buffer_size, OBS_DIM)
        self.act = torch.rand(buffer_size, ACT_DIM) * 2 - 1
        self.rew = torch.randn(buffer_size)
        self.terminated = torch.rand(buffer_size) < 0.01
        self.obs_next = torch.randn(buffer_size, OBS_DIM)

    def sample_action(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """A tanh-squashed Gaussian action and its log-probability (with the tanh correction)."""
        return squashed_gaussian_sample(self.actor(obs))

    def update(self) -> None:
        idx = torch.randint(0, len(self.obs), (BATCH,))
        obs, act, rew = self.obs[idx], self.act[idx], self.rew[idx]
        terminated, obs_next = self.terminated[idx], self.obs_next[idx]
        alpha = self.log_alpha.detach().exp()
        with torch.no_grad():
            act_next, log_prob_next = self.sample_action(obs_next)
            obs_act_next = torch.cat([obs_next, act_next], -1)
            q_next = torch.min(*(t(obs_act_next).squeeze(-1) for t in self.targets))
            target = rew + GAMMA * (~terminated) * (q_next - alpha * log_prob_next)
        obs_act = torch.cat([obs, act], -1)
        for critic, optim in zip(self.critics, self.critic_optims, strict=True):
            loss = (critic(obs_act).squeeze(-1) - target).pow(2).mean()
            optim.zero_grad()
            loss.backward()
            optim.step()
        new_act, log_prob = self.sample_action(obs)
        obs_new_act = torch.cat([obs, new_act], -1)
        q = torch.min(*(c(obs_new_act).squeeze(-1) for c in self.critics))
        actor_loss = (alpha * log_prob - q).mean()
        self.actor_optim.zero_grad()
        actor_loss.backward()
        self.actor_optim.step()
        alpha_loss = -(self.log_alpha * (log_prob.detach() + self.target_entropy)).mean()
        self.alpha_optim.zero_grad()
        alpha_loss.backward()
        self.alpha_optim.step()
        with torch.no_grad():
            for critic, target_net in zip(self.critics, self.targets, strict=True):
                torch._foreach_lerp_(list(target_net.parameters()), list(critic.parameters()), TAU)
