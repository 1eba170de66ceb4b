"""A bare PyTorch PPO update: the speed limit for ``benchmark/update_rate_ppo.py``.

Nothing here is tianshou: plain tensors, ``nn.Sequential`` tanh networks, torch's fused Adam,
``clip_grad_norm_`` on foreach kernels and a numba loop for GAE. One :meth:`BarePPO.update_on`
does exactly the work of one library ``PPO.update`` on a rollout, in the same order, so that
given the same weights, data and NumPy seed it computes the same losses and ends with the same
parameters (``test/benchmark/test_bare_ppo.py`` checks this):

1. the critic's values of the observations and next observations and the old policy's
   log-probabilities of the stored actions, without gradient (a next observation that is the
   following row's observation takes that row's value, as the library does);
2. GAE(lambda) advantages and returns (with return scaling: the values are unscaled by the
   running standard deviation of the returns before bootstrapping, the returns scaled by it
   after, and the statistics updated with the unscaled returns);
3. ``repeat`` passes over a ``np.random.permutation`` of the rollout in minibatches (a shorter
   last minibatch merged into the one before), each pass after the first recomputing values and
   advantages with the current critic if ``recompute_advantage``;
4. per minibatch: optional advantage standardisation, the clipped surrogate, the (optionally
   clipped) squared value error, the entropy bonus, one backward pass, global grad-norm
   clipping and an Adam step; the four losses are kept per step as the library's stats are;
5. the learning rate decayed linearly to zero over ``lr_decay_updates`` updates, if given.

The actor is a diagonal Gaussian with a state-independent log standard deviation
(continuous actions) or a categorical distribution from logits (``num_actions``); the critic a
tanh MLP with one output. Two ways of evaluating the policy are offered:

* ``torch_distributions=True`` (the reference of the benchmark's target): the policy's
  log-probabilities and entropy come from ``torch.distributions`` objects (``Normal`` summed
  over the action dims, as CleanRL's PPO does, or ``Categorical``), which is what a library
  with a pluggable distribution function must do as well;
* ``torch_distributions=False``: the same numbers from hand-written formulas on the log std,
  which skips the distribution objects' construction, argument validation and extra autograd
  nodes, the fastest way there is in eager PyTorch.

When ``ent_coef`` is 0 the entropy is computed without gradient, for the stats only.

:class:`BareOnPolicyLoop` adds the env side of a bare training loop (in-process gymnasium envs,
actions from the bare actor, a rollout per update) for the throughput comparison of the small
CartPole configuration; :class:`BareVectorEnvLoop` the same over an EnvPool vector env with
normalised observations and Gaussian actions, for the end-to-end Hopper-v5 comparison in
``benchmark/peers/compare_sb3.py``.
"""

import math
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn
from torch.distributions import Categorical, Distribution, Normal

from benchmark.common import gae, mlp

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
_RET_EPS = 1e-8


def merge_moments(
    mean: Any, var: Any, count: int, batch_mean: Any, batch_var: Any, batch_count: int
) -> tuple[Any, Any, int]:
    """``(mean, variance, count)`` of the samples behind ``(mean, var, count)`` and a batch's
    ``(batch_mean, batch_var, batch_count)`` together (Chan et al.'s parallel update; floats or
    arrays alike)."""
    total = count + batch_count
    delta = batch_mean - mean
    merged_var = var * count + batch_var * batch_count + delta**2 * count * batch_count / total
    return mean + delta * batch_count / total, merged_var / total, total


class RunningReturnVariance:
    """Running mean and variance of the returns (Chan et al.'s parallel update), as the
    library's return scaling keeps them; only the variance scales the returns."""

    def __init__(self) -> None:
        self.mean, self.var, self.count = 0.0, 1.0, 0

    def update(self, values: np.ndarray) -> None:
        self.mean, self.var, self.count = merge_moments(
            self.mean, self.var, self.count, float(values.mean()), float(values.var()), len(values)
        )


class BarePPO:
    """PPO on one rollout per update.

    :param data: the rollout in chronological order (``obs``, ``act``, ``rew``, ``terminated``,
        ``truncated``, ``obs_next``; see ``benchmark.common.random_transitions``).
    :param num_actions: a categorical policy over this many actions; None for a Gaussian over
        ``data["act"].shape[1]`` continuous actions.
    :param hidden: width of both hidden layers of the actor and the critic.
    :param batch_size: rows per minibatch.
    :param repeat: passes over the rollout per update.
    :param lr_decay_updates: decay the learning rate linearly to 0 over this many updates.
    :param torch_distributions: evaluate the policy through ``torch.distributions`` objects
        rather than hand-written formulas (see the module docstring).
    """

    def __init__(
        self,
        data: dict[str, np.ndarray],
        *,
        num_actions: int | None = None,
        hidden: int = 64,
        lr: float = 3e-4,
        gamma: float = 0.99,
        gae_lambda: float = 0.95,
        eps_clip: float = 0.2,
        vf_coef: float = 0.25,
        ent_coef: float = 0.0,
        max_grad_norm: float = 0.5,
        batch_size: int = 64,
        repeat: int = 10,
        advantage_normalization: bool = False,
        recompute_advantage: bool = True,
        value_clip: bool = False,
        return_scaling: bool = True,
        lr_decay_updates: int | None = None,
        torch_distributions: bool = True,
    ) -> None:
        self.data = {k: torch.as_tensor(data[k]) for k in ("obs", "act", "rew", "terminated")}
        self.data["truncated"] = torch.as_tensor(data["truncated"])
        self.data["obs_next"] = torch.as_tensor(data["obs_next"])
        obs_dim = self.data["obs"].shape[1]
        self.discrete = num_actions is not None
        act_dim = num_actions if num_actions is not None else self.data["act"].shape[1]
        self.actor = mlp(obs_dim, hidden, hidden, act_dim, activation=nn.Tanh)
        self.log_std = nn.Parameter(torch.zeros(act_dim)) if not self.discrete else None
        self.critic = mlp(obs_dim, hidden, hidden, 1, activation=nn.Tanh)
        self.params = [*self.actor.parameters(), *self.critic.parameters()]
        if self.log_std is not None:
            self.params.append(self.log_std)
        self.optim = torch.optim.Adam(self.params, lr=lr, fused=True)
        self.lr, self.lr_decay_updates, self.updates = lr, lr_decay_updates, 0
        self.gamma, self.gae_lambda, self.eps_clip = gamma, gae_lambda, eps_clip
        self.vf_coef, self.ent_coef, self.max_grad_norm = vf_coef, ent_coef, max_grad_norm
        self.batch_size, self.repeat = batch_size, repeat
        self.advantage_normalization = advantage_normalization
        self.recompute_advantage, self.value_clip = recompute_advantage, value_clip
        self.return_scaling = return_scaling
        self.ret_rms = RunningReturnVariance()
        self.torch_distributions = torch_distributions

    # ------------------------------------------------------------------------------ the policy
    def log_prob_and_entropy(
        self, obs: torch.Tensor, act: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Log-probabilities of ``act`` ``(B,)`` and the mean entropy of the policy at ``obs``
        (the latter without gradient if ``ent_coef`` is 0)."""
        out = self.actor(obs)
        if self.torch_distributions:
            dist: Distribution
            if self.log_std is None:
                dist = Categorical(logits=out)
                log_prob = dist.log_prob(act)
            else:
                dist = Normal(out, self.log_std.expand_as(out).exp())
                log_prob = dist.log_prob(act).sum(-1)
            with torch.set_grad_enabled(torch.is_grad_enabled() and self.ent_coef != 0.0):
                entropy = dist.entropy()
                entropy = (entropy if self.log_std is None else entropy.sum(-1)).mean()
            return log_prob, entropy
        if self.log_std is None:
            log_p = out.log_softmax(-1)
            with torch.set_grad_enabled(torch.is_grad_enabled() and self.ent_coef != 0.0):
                entropy = -(log_p.exp() * log_p).sum(-1).mean()
            return log_p.gather(-1, act.long().unsqueeze(-1)).squeeze(-1), entropy
        log_std = self.log_std
        z = (act - out) / log_std.exp()
        log_prob = (-0.5 * z.square() - log_std).sum(-1) - out.shape[-1] * _HALF_LOG_2PI
        # the entropy does not depend on the state: the batch mean is the per-state value
        with torch.set_grad_enabled(torch.is_grad_enabled() and self.ent_coef != 0.0):
            entropy = (log_std + 0.5 + _HALF_LOG_2PI).sum()
        return log_prob, entropy

    # ------------------------------------------------------------------------------ the update
    def update(self) -> dict[str, torch.Tensor]:
        d = self.data
        return self.update_on(
            d["obs"], d["act"], d["rew"], d["terminated"], d["truncated"], d["obs_next"]
        )

    def update_on(
        self,
        obs: torch.Tensor,
        act: torch.Tensor,
        rew: torch.Tensor,
        terminated: torch.Tensor,
        truncated: torch.Tensor,
        obs_next: torch.Tensor,
    ) -> dict[str, torch.Tensor]:
        """One update on a rollout; returns the per-step ``loss``, ``clip_loss``, ``vf_loss`` and
        ``ent_loss`` (tensors of one entry per gradient step)."""
        end = (terminated | truncated).numpy().copy()
        end[-1] = True  # the last stored step of a running episode stops the recursion
        not_terminated = ~terminated
        # next observations that are not the following row's observation (an episode's end,
        # the last row) need a critic pass of their own, unless their episode terminated
        follows = torch.zeros(len(obs), dtype=torch.bool)
        follows[:-1] = (obs_next[:-1] == obs[1:]).flatten(1).all(1)
        fresh = ~follows & not_terminated
        with torch.no_grad():
            log_prob_old, _ = self.log_prob_and_entropy(obs, act)
        n, losses = len(obs), []
        for epoch in range(self.repeat):
            if epoch == 0 or self.recompute_advantage:
                v_s, returns, adv = self._targets(obs, obs_next, rew, not_terminated, end, fresh)
            perm = torch.from_numpy(np.random.permutation(n))
            columns = (obs[perm], act[perm], log_prob_old[perm], v_s[perm], returns[perm],
                       adv[perm])  # fmt: skip
            for start in range(0, n, self.batch_size):
                if n % self.batch_size and start + 2 * self.batch_size >= n:
                    rows = slice(start, n)  # merge the short last minibatch
                else:
                    rows = slice(start, start + self.batch_size)
                losses.append(self._step(*(c[rows] for c in columns)))
                if rows.stop == n:
                    break
        self.updates += 1
        if self.lr_decay_updates is not None:
            factor = max(0.0, 1.0 - self.updates / self.lr_decay_updates)
            self.optim.param_groups[0]["lr"] = self.lr * factor
        stacked = torch.stack(losses).T
        return dict(zip(("loss", "clip_loss", "vf_loss", "ent_loss"), stacked, strict=True))

    def _targets(
        self,
        obs: torch.Tensor,
        obs_next: torch.Tensor,
        rew: torch.Tensor,
        not_terminated: torch.Tensor,
        end: np.ndarray,
        fresh: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(old values, returns, advantages)`` from the current critic; the next values are
        the following rows' values except at the ``fresh`` rows."""
        with torch.no_grad():
            v_s = self.critic(obs).squeeze(-1)
            v_next = torch.zeros_like(v_s)
            v_next[:-1] = v_s[1:]
            v_next[fresh] = self.critic(obs_next[fresh]).squeeze(-1)
        v_s64 = v_s.numpy().astype(np.float64)
        v_next64 = v_next.numpy().astype(np.float64) * not_terminated.numpy()
        if self.return_scaling:
            scale = math.sqrt(self.ret_rms.var + _RET_EPS)
            v_s64, v_next64 = v_s64 * scale, v_next64 * scale
        adv = gae(v_s64, v_next64, rew.numpy().astype(np.float64), end, self.gamma,
                   self.gae_lambda)  # fmt: skip
        returns = adv + v_s64
        if self.return_scaling:
            scaled = returns / math.sqrt(self.ret_rms.var + _RET_EPS)
            self.ret_rms.update(returns)
            returns = scaled
        return (
            v_s,
            torch.as_tensor(returns, dtype=torch.float32),
            torch.as_tensor(adv, dtype=torch.float32),
        )

    def _step(
        self,
        obs: torch.Tensor,
        act: torch.Tensor,
        log_prob_old: torch.Tensor,
        v_old: torch.Tensor,
        returns: torch.Tensor,
        adv: torch.Tensor,
    ) -> torch.Tensor:
        """One gradient step; returns ``(loss, clip_loss, vf_loss, ent_loss)``, detached."""
        if self.advantage_normalization:
            adv = (adv - adv.mean()) / (adv.std() + _RET_EPS)
        log_prob, entropy = self.log_prob_and_entropy(obs, act)
        ratio = (log_prob - log_prob_old).exp()
        clipped = ratio.clamp(1.0 - self.eps_clip, 1.0 + self.eps_clip)
        clip_loss = -torch.min(ratio * adv, clipped * adv).mean()
        value = self.critic(obs).squeeze(-1)
        error = (returns - value).square()
        if self.value_clip:
            v_clipped = v_old + (value - v_old).clamp(-self.eps_clip, self.eps_clip)
            error = torch.max(error, (returns - v_clipped).square())
        vf_loss = error.mean()
        loss = clip_loss + self.vf_coef * vf_loss
        if self.ent_coef != 0.0:
            loss = loss - self.ent_coef * entropy
        self.optim.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(self.params, self.max_grad_norm, foreach=True)
        self.optim.step()
        return torch.stack([loss, clip_loss, vf_loss, entropy]).detach()


class _BareRollouts:
    """A rollout of ``steps_per_env`` steps of each of ``num_envs`` envs, as arrays laid out
    env after env, and the training loop around it: :meth:`collect` (written by the subclass)
    fills the arrays, :meth:`run` hands them to :meth:`BarePPO.update_on` (each env's last step
    ends its segment, bootstrapped unless terminated).

    :param act_shape: the shape of one action (``()`` for a discrete one).
    """

    def __init__(
        self,
        num_envs: int,
        steps_per_env: int,
        obs_shape: tuple[int, ...],
        act_shape: tuple[int, ...],
        act_dtype: type,
        learner: BarePPO,
    ) -> None:
        self.steps_per_env, self.learner = steps_per_env, learner
        shape = (num_envs, steps_per_env)
        self.rollout_obs = np.empty((*shape, *obs_shape), dtype=np.float32)
        self.rollout_next = np.empty_like(self.rollout_obs)
        self.act = np.empty((*shape, *act_shape), dtype=act_dtype)
        self.rew = np.empty(shape, dtype=np.float32)
        self.terminated = np.empty(shape, dtype=bool)
        self.truncated = np.empty(shape, dtype=bool)

    def collect(self) -> None:
        """Fill the rollout arrays, ``steps_per_env`` steps of every env."""
        raise NotImplementedError

    def run(self, iterations: int) -> int:
        """``iterations`` rounds of collecting and learning; returns the env steps taken."""
        for _ in range(iterations):
            self.collect()
            truncated = self.truncated.copy()
            truncated[:, -1] |= ~self.terminated[:, -1]  # a segment's last step ends it
            columns = [
                self.rollout_obs, self.act, self.rew, self.terminated, truncated, self.rollout_next
            ]  # fmt: skip
            flat = [torch.as_tensor(c.reshape(-1, *c.shape[2:])) for c in columns]
            self.learner.update_on(*flat)
        return iterations * self.rew.size


class BareOnPolicyLoop(_BareRollouts):
    """The env side of a bare on-policy training loop: ``num_envs`` gymnasium envs stepped in
    this process (reset when an episode ends) with actions sampled from :class:`BarePPO`'s
    categorical actor, and a rollout of ``steps_per_env`` steps per env per update.

    :param make_env: builds one env.
    :param learner: the PPO whose actor acts and which learns from each rollout.
    """

    def __init__(
        self,
        make_env: Callable[[], gym.Env],
        num_envs: int,
        steps_per_env: int,
        learner: BarePPO,
        seed: int = 0,
    ) -> None:
        self.envs = [make_env() for _ in range(num_envs)]
        self.obs = np.stack([env.reset(seed=seed + i)[0] for i, env in enumerate(self.envs)])
        super().__init__(num_envs, steps_per_env, self.obs.shape[1:], (), np.int64, learner)

    def collect(self) -> None:
        for t in range(self.steps_per_env):
            with torch.no_grad():
                logits = self.learner.actor(torch.as_tensor(self.obs, dtype=torch.float32))
                actions = Categorical(logits=logits).sample().numpy()
            self.rollout_obs[:, t] = self.obs
            self.act[:, t] = actions
            for i, env in enumerate(self.envs):
                obs, rew, terminated, truncated, _ = env.step(int(actions[i]))
                self.rollout_next[i, t] = obs
                self.rew[i, t] = rew
                self.terminated[i, t], self.truncated[i, t] = terminated, truncated
                self.obs[i] = env.reset()[0] if terminated or truncated else obs

    def close(self) -> None:
        for env in self.envs:
            env.close()


class RunningObsNorm:
    """Observations normalised by the running mean and variance of all observations seen (steps
    and resets alike), clipped to ``[-clip, clip]``: what ``VectorEnvNormObs`` does, bare."""

    def __init__(self, clip: float = 10.0, eps: float = float(np.finfo(np.float32).eps)) -> None:
        self.mean, self.var, self.count = np.zeros(1), np.ones(1), 0
        self.clip, self.eps = clip, eps

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        """Merge ``obs`` ``(B, D)`` into the statistics, then return it normalised."""
        self.mean, self.var, self.count = merge_moments(
            self.mean, self.var, self.count, obs.mean(axis=0), obs.var(axis=0), len(obs)
        )
        return np.clip((obs - self.mean) / np.sqrt(self.var + self.eps), -self.clip, self.clip)


class BareVectorEnvLoop(_BareRollouts):
    """A bare on-policy training loop over a vector env with EnvPool's gymnasium interface
    (``reset(env_ids)``, ``step(actions)`` of all envs at once, e.g. ``envpool.make(...,
    env_type="gymnasium")``): observations normalised by :class:`RunningObsNorm`, actions
    sampled from :class:`BarePPO`'s Gaussian and clipped to ``[-1, 1]`` for the env (the raw
    samples are learnt from), finished envs reset right away.

    :param envs: the vector env (envs with flat observations).
    :param learner: the PPO (Gaussian actor) whose actor acts and which learns from each rollout.
    """

    def __init__(self, envs: Any, steps_per_env: int, learner: BarePPO) -> None:
        if learner.log_std is None:
            raise ValueError("BareVectorEnvLoop needs a Gaussian actor (BarePPO without actions)")
        self.envs, self.norm = envs, RunningObsNorm()
        self.obs = self.norm(envs.reset()[0])
        act_shape = tuple(learner.log_std.shape)
        num_envs = len(self.obs)
        super().__init__(
            num_envs, steps_per_env, self.obs.shape[1:], act_shape, np.float32, learner
        )

    def collect(self) -> None:
        learner = self.learner
        assert learner.log_std is not None
        for t in range(self.steps_per_env):
            with torch.no_grad():
                loc = learner.actor(torch.as_tensor(self.obs, dtype=torch.float32))
                actions = Normal(loc, learner.log_std.exp()).sample().numpy()
            self.rollout_obs[:, t] = self.obs
            self.act[:, t] = actions
            obs, rew, terminated, truncated, _ = self.envs.step(np.clip(actions, -1.0, 1.0))
            obs = self.norm(obs)
            self.rollout_next[:, t] = obs
            self.rew[:, t] = rew
            self.terminated[:, t], self.truncated[:, t] = terminated, truncated
            finished = np.flatnonzero(terminated | truncated)
            if len(finished):
                obs[finished] = self.norm(self.envs.reset(finished)[0])
            self.obs = obs
