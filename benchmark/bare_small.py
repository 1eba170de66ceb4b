"""Bare off-policy learners at the small learning-test configurations: the limits for
``benchmark/train_small.py``.

Nothing here is tianshou: a :class:`Ring` of preallocated per-env tensors, ``nn.Sequential``
networks and torch's fused Adam. :class:`BareDQN` is double DQN with n-step returns and a
periodic target copy; :class:`BareContinuous` is SAC, TD3 or DDPG on Pendulum's shapes. The
hyper-parameters below are the learning tests' and are shared with the library's side of the
benchmark, so that both do the same work.
"""

import copy
from collections.abc import Sequence

import numpy as np
import torch

from benchmark.common import adam, mlp, squashed_gaussian_sample

DQN_GAMMA, DQN_N_STEP, DQN_TARGET_FREQ, DQN_EPS = 0.9, 3, 320, 0.1
GAMMA, TAU, LR, EXPLORATION_STD = 0.99, 0.005, 1e-3, 0.1
POLICY_NOISE, NOISE_CLIP, ACTOR_FREQ = 0.2, 0.5, 2


class Ring:
    """Preallocated per-env transition arrays (``num_envs`` x ``capacity``, no wrap-around:
    a run adds fewer steps than the capacity after :meth:`clear`) with uniform sampling."""

    def __init__(self, num_envs: int, capacity: int, obs_dim: int, act_dim: int | None) -> None:
        self.num_envs, self.capacity, self.size = num_envs, capacity, 0
        act_shape = (num_envs, capacity) if act_dim is None else (num_envs, capacity, act_dim)
        self.obs = torch.zeros(num_envs, capacity, obs_dim)
        self.obs_next = torch.zeros(num_envs, capacity, obs_dim)
        self.act = torch.zeros(act_shape, dtype=torch.int64 if act_dim is None else torch.float32)
        self.rew = torch.zeros(num_envs, capacity)
        self.terminated = torch.zeros(num_envs, capacity, dtype=torch.bool)
        self.done = torch.zeros(num_envs, capacity, dtype=torch.bool)

    def clear(self) -> None:
        self.size = 0

    def add(
        self,
        obs: np.ndarray,
        act: np.ndarray,
        rew: np.ndarray,
        terminated: np.ndarray,
        done: np.ndarray,
        obs_next: np.ndarray,
    ) -> None:
        """Write one step of every env."""
        t = self.size
        self.obs[:, t] = torch.from_numpy(obs)
        self.act[:, t] = torch.from_numpy(act)
        self.rew[:, t] = torch.from_numpy(rew)
        self.terminated[:, t] = torch.from_numpy(terminated)
        self.done[:, t] = torch.from_numpy(done)
        self.obs_next[:, t] = torch.from_numpy(obs_next)
        self.size += 1

    def sample(self, batch_size: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Uniform (env, step) indices of stored transitions."""
        env = torch.randint(0, self.num_envs, (batch_size,))
        step = torch.randint(0, self.size, (batch_size,))
        return env, step


class BareLearner:
    """A bare off-policy learner: :meth:`act` for collection, :meth:`update` one gradient step
    from ``ring``."""

    ring: Ring

    def act(self, obs: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def update(self, batch_size: int) -> None:
        raise NotImplementedError


class BareDQN(BareLearner):
    """Double DQN with ``n``-step returns (stopped at episode ends) and a periodic target copy."""

    def __init__(self, hidden: Sequence[int], ring: Ring) -> None:
        self.net = mlp(4, *hidden, 2)
        self.target = copy.deepcopy(self.net)
        self.optim = adam(list(self.net.parameters()), LR)
        self.ring, self.updates = ring, 0
        self.discounts = DQN_GAMMA ** torch.arange(DQN_N_STEP, dtype=torch.float32)

    def act(self, obs: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            act = self.net(torch.as_tensor(obs, dtype=torch.float32)).argmax(-1).numpy()
        explore = np.random.rand(len(act)) < DQN_EPS
        act[explore] = np.random.randint(0, 2, int(explore.sum()))
        return act

    def td_target(self, env: torch.Tensor, step: torch.Tensor) -> torch.Tensor:
        """The double-DQN ``n``-step targets of the transitions ``(env, step)``: rewards summed
        up to the episode's end (or the newest step), bootstrapped unless it terminated."""
        r = self.ring
        horizon = step[:, None] + torch.arange(DQN_N_STEP)
        steps = horizon.clamp(max=r.size - 1)
        done = r.done[env[:, None], steps]
        # a step counts while no earlier step of the horizon ended the episode
        alive = torch.cat([torch.ones(len(env), 1, dtype=torch.bool), ~done[:, :-1]], 1)
        alive = alive.cumprod(1).bool() & (horizon < r.size)
        counted = alive.sum(1)
        last = steps.gather(1, (counted - 1)[:, None]).squeeze(1)
        returns = (r.rew[env[:, None], steps] * alive * self.discounts).sum(1)
        with torch.no_grad():
            obs_next = r.obs_next[env, last]
            best = self.net(obs_next).argmax(-1, keepdim=True)
            q_next = self.target(obs_next).gather(1, best).squeeze(1)
            return returns + DQN_GAMMA**counted * (~r.terminated[env, last]) * q_next

    def update(self, batch_size: int) -> None:
        r = self.ring
        if self.updates % DQN_TARGET_FREQ == 0:
            self.target.load_state_dict(self.net.state_dict())
        self.updates += 1
        env, step = r.sample(batch_size)
        target = self.td_target(env, step)
        q = self.net(r.obs[env, step]).gather(1, r.act[env, step][:, None]).squeeze(1)
        loss = (q - target).pow(2).mean()
        self.optim.zero_grad()
        loss.backward()
        self.optim.step()


class BareContinuous(BareLearner):
    """SAC, TD3 or DDPG on Pendulum's shapes (obs 3, act 1, action bound 2)."""

    def __init__(self, name: str, hidden: Sequence[int], ring: Ring) -> None:
        self.name, self.ring, self.updates = name, ring, 0
        out = 2 if name == "sac" else 1
        self.actor = mlp(3, *hidden, out)
        self.actor_target = copy.deepcopy(self.actor)
        self.critics = [mlp(4, *hidden, 1) for _ in range(1 if name == "ddpg" else 2)]
        self.targets = [copy.deepcopy(c) for c in self.critics]
        self.actor_optim = adam(list(self.actor.parameters()), LR)
        self.critic_optims = [adam(list(c.parameters()), LR) for c in self.critics]
        self.log_alpha = torch.zeros(1, requires_grad=True)
        self.alpha_optim = adam([self.log_alpha], 3e-4)

    def sample(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """SAC's tanh-squashed Gaussian action in [-1, 1] and its log-probability."""
        return squashed_gaussian_sample(self.actor(obs))

    def act(self, obs: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            obs_t = torch.as_tensor(obs, dtype=torch.float32)
            if self.name == "sac":
                act = self.sample(obs_t)[0].numpy()
            else:
                act = torch.tanh(self.actor(obs_t)).numpy()
                act = act + np.random.normal(0, EXPLORATION_STD, act.shape)
        return np.clip(act, -1, 1).astype(np.float32)

    def _step(self, optim: torch.optim.Optimizer, loss: torch.Tensor) -> None:
        optim.zero_grad()
        loss.backward()
        optim.step()

    def update(self, batch_size: int) -> None:
        r = self.ring
        env, step = r.sample(batch_size)
        obs, act, rew = r.obs[env, step], r.act[env, step], r.rew[env, step]
        not_done, obs_next = ~r.terminated[env, step], r.obs_next[env, step]
        alpha = self.log_alpha.detach().exp()
        with torch.no_grad():
            if self.name == "sac":
                act_next, log_prob_next = self.sample(obs_next)
            else:
                act_next = torch.tanh(self.actor_target(obs_next))
                if self.name == "td3":
                    noise = (torch.randn_like(act_next) * POLICY_NOISE).clamp(
                        -NOISE_CLIP, NOISE_CLIP
                    )
                    act_next = (act_next + noise).clamp(-1, 1)
            obs_act_next = torch.cat([obs_next, 2 * act_next], -1)
            q_next = torch.stack([t(obs_act_next).squeeze(-1) for t in self.targets]).min(0)[0]
            if self.name == "sac":
                q_next = q_next - alpha * log_prob_next
            target = rew + GAMMA * not_done * q_next
        obs_act = torch.cat([obs, act], -1)
        for critic, optim in zip(self.critics, self.critic_optims, strict=True):
            self._step(optim, (critic(obs_act).squeeze(-1) - target).pow(2).mean())
        self.updates += 1
        if self.name == "td3" and self.updates % ACTOR_FREQ:
            return
        if self.name == "sac":
            new_act, log_prob = self.sample(obs)
            obs_new_act = torch.cat([obs, 2 * new_act], -1)
            q = torch.min(*(c(obs_new_act).squeeze(-1) for c in self.critics))
            self._step(self.actor_optim, (alpha * log_prob - q).mean())
            entropy_gap = log_prob.detach() - 1.0
            self._step(self.alpha_optim, -(self.log_alpha * entropy_gap).mean())
        else:
            new_act = torch.tanh(self.actor(obs))
            q = self.critics[0](torch.cat([obs, 2 * new_act], -1))
            self._step(self.actor_optim, -q.mean())
        with torch.no_grad():
            pairs = [(self.actor, self.actor_target)] if self.name != "sac" else []
            for source, lagged in [*pairs, *zip(self.critics, self.targets, strict=True)]:
                torch._foreach_lerp_(list(lagged.parameters()), list(source.parameters()), TAU)
