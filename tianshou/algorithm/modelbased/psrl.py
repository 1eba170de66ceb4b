"""Posterior sampling for reinforcement learning (PSRL) on tabular MDPs.

PSRL (Strens 2000; Osband, Russo & Van Roy 2013, "(More) Efficient Reinforcement Learning via
Posterior Sampling") keeps a Bayesian posterior over the MDP: a Dirichlet over the next-state
distribution of every state-action pair and a Normal over every mean reward. After each update
it draws one MDP from the posterior, solves it by value iteration and acts greedily in it until
the next update. Exploration comes from the posterior's uncertainty alone: an action that is
rarely tried has a wide posterior, so some draws make it look best.

States and actions are indices (``Discrete`` spaces); the model is a set of numpy arrays with
shapes ``(S, A, S)`` (transitions) and ``(S, A)`` (rewards).

Where this differs from earlier Tianshou releases: the reward posterior is the conjugate
Normal one computed from cumulative sufficient statistics, so pairs never visited keep their
prior (before, their spread collapsed after the first update); value iteration stops on an
absolute tolerance and breaks ties by the lowest action instead of random noise; the discount
factor must be below 1; ``add_done_loop`` counts terminated episodes only, not truncated ones.
"""

from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.spaces import Discrete

from tianshou.algorithm.algorithm_base import OnPolicyAlgorithm, Policy, PolicyState, TrainingStats
from tianshou.data.batch import Batch

_VARIANCE_FLOOR = float(np.finfo(np.float32).eps)
"""Added to the empirical reward variance so that a pair whose rewards were all equal keeps a
finite posterior precision."""


@dataclass(kw_only=True)
class PSRLTrainingStats(TrainingStats):
    """The reward posterior after an update, averaged over all state-action pairs.

    :param psrl_rew_mean: mean of the posterior reward means.
    :param psrl_rew_std: mean of the posterior reward standard deviations.
    """

    psrl_rew_mean: float = 0.0
    psrl_rew_std: float = 0.0


class PSRLModel:
    """The posterior over a tabular MDP, and the policy that is optimal in one draw from it.

    Transitions: the Dirichlet parameters are ``trans_count_prior`` plus the observed transition
    counts. Rewards: each pair's mean reward has the Normal prior ``N(rew_mean_prior,
    rew_std_prior ** 2)``; given ``n`` observed rewards with mean ``m`` and empirical variance
    ``v`` (the noise variance, a plug-in estimate, plus float32's eps so that equal rewards
    keep it positive), the posterior is Normal with precision ``1 / rew_std_prior ** 2 + n / v``
    and mean ``(rew_mean_prior / rew_std_prior ** 2 + n * m / v) / precision``.

    :param trans_count_prior: Dirichlet prior counts, shape ``(S, A, S)``, all positive; larger
        counts make the agent trust its prior longer (1 everywhere: uniform over next states).
    :param rew_mean_prior: prior mean reward of each pair, shape ``(S, A)``.
    :param rew_std_prior: prior standard deviation of each mean reward, shape ``(S, A)``, all
        positive; wider priors make unexplored pairs look better in more draws.
    :param gamma: discount factor in [0, 1); value iteration needs it below 1 to converge.
    :param epsilon: value iteration stops once a sweep changes no state value by more than this.
    """

    def __init__(
        self,
        trans_count_prior: np.ndarray,
        rew_mean_prior: np.ndarray,
        rew_std_prior: np.ndarray,
        gamma: float,
        epsilon: float,
    ) -> None:
        trans_count_prior = np.array(trans_count_prior, dtype=np.float64)
        self.rew_mean_prior = np.array(rew_mean_prior, dtype=np.float64)
        self.rew_std_prior = np.array(rew_std_prior, dtype=np.float64)
        if self.rew_mean_prior.ndim != 2:
            raise ValueError(
                "rew_mean_prior must have shape (n_state, n_action), "
                f"got {self.rew_mean_prior.shape}"
            )
        self.n_state, self.n_action = self.rew_mean_prior.shape
        _check_shape(
            "trans_count_prior", trans_count_prior, (self.n_state, self.n_action, self.n_state)
        )
        _check_shape("rew_std_prior", self.rew_std_prior, (self.n_state, self.n_action))
        if not np.all(trans_count_prior > 0):
            raise ValueError("trans_count_prior must be positive everywhere (Dirichlet parameters)")
        if not np.all(self.rew_std_prior > 0):
            raise ValueError("rew_std_prior must be positive everywhere")
        _check_gamma_eps(gamma, epsilon)
        self.gamma = gamma
        self.eps = epsilon
        self.trans_count = trans_count_prior
        """The Dirichlet posterior's parameters: prior plus observed counts, ``(S, A, S)``."""
        self.rew_sum = np.zeros((self.n_state, self.n_action))
        self.rew_square_sum = np.zeros((self.n_state, self.n_action))
        self.rew_count = np.zeros((self.n_state, self.n_action))
        self.rew_mean = self.rew_mean_prior.copy()
        """The posterior mean of each pair's mean reward, ``(S, A)``."""
        self.rew_std = self.rew_std_prior.copy()
        """The posterior standard deviation of each pair's mean reward, ``(S, A)``."""
        self.value = np.zeros(self.n_state)
        """The state values of the last solved draw (the next solve starts from them)."""
        self.policy: np.ndarray | None = None
        """The greedy action of each state in the last solved draw, ``(S,)``."""
        self.updated = False
        """Whether :attr:`policy` was solved since the last :meth:`observe`."""

    def observe(
        self,
        trans_count: np.ndarray,
        rew_sum: np.ndarray,
        rew_square_sum: np.ndarray,
        rew_count: np.ndarray,
    ) -> None:
        """Add the sufficient statistics of new data to the posterior.

        :param trans_count: how often each ``(s, a, s')`` was seen, shape ``(S, A, S)``.
        :param rew_sum: sum of the rewards seen for each ``(s, a)``, shape ``(S, A)``.
        :param rew_square_sum: sum of their squares, shape ``(S, A)``.
        :param rew_count: number of rewards seen for each ``(s, a)``, shape ``(S, A)``.
        """
        pair_shape = (self.n_state, self.n_action)
        _check_shape("trans_count", trans_count, (*pair_shape, self.n_state))
        _check_shape("rew_sum", rew_sum, pair_shape)
        _check_shape("rew_square_sum", rew_square_sum, pair_shape)
        _check_shape("rew_count", rew_count, pair_shape)
        if np.any(trans_count < 0) or np.any(rew_count < 0):
            raise ValueError("trans_count and rew_count must be non-negative counts")
        self.trans_count = self.trans_count + trans_count
        self.rew_sum = self.rew_sum + rew_sum
        self.rew_square_sum = self.rew_square_sum + rew_square_sum
        self.rew_count = self.rew_count + rew_count
        self.rew_mean, self.rew_std = self._reward_posterior()
        self.updated = False

    def _reward_posterior(self) -> tuple[np.ndarray, np.ndarray]:
        count = self.rew_count
        sample_mean = self.rew_sum / np.maximum(count, 1.0)
        sample_var = np.maximum(self.rew_square_sum / np.maximum(count, 1.0) - sample_mean**2, 0)
        data_precision = count / (sample_var + _VARIANCE_FLOOR)
        prior_precision = 1.0 / self.rew_std_prior**2
        precision = prior_precision + data_precision
        mean = (prior_precision * self.rew_mean_prior + data_precision * sample_mean) / precision
        return mean, np.sqrt(1.0 / precision)

    def sample_trans_prob(self) -> np.ndarray:
        """Draw next-state distributions from the Dirichlet posterior, shape ``(S, A, S)``.

        Uses numpy's global random generator (normalised Gamma draws).
        """
        draws = np.random.gamma(self.trans_count)
        return draws / draws.sum(axis=-1, keepdims=True)

    def sample_reward(self) -> np.ndarray:
        """Draw mean rewards from the Normal posterior, shape ``(S, A)`` (numpy's global RNG)."""
        return np.random.normal(self.rew_mean, self.rew_std)

    def solve_policy(self) -> None:
        """Draw an MDP from the posterior and set :attr:`policy` and :attr:`value` to its
        optimal policy and values."""
        self.policy, self.value = self.value_iteration(
            self.sample_trans_prob(), self.sample_reward(), self.gamma, self.eps, self.value
        )
        self.updated = True

    @staticmethod
    def value_iteration(
        trans_prob: np.ndarray,
        rew: np.ndarray,
        gamma: float,
        eps: float,
        value: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Solve an MDP by value iteration, ``V <- max_a (r(s, a) + gamma * P(s, a) . V)``.

        The sweeps stop once none changes a value by more than ``eps``; the values are then within
        ``eps * gamma / (1 - gamma)`` of the optimal ones.

        :param trans_prob: next-state probabilities, shape ``(S, A, S)``.
        :param rew: rewards, shape ``(S, A)``.
        :param gamma: discount factor in [0, 1).
        :param eps: the stopping tolerance, positive.
        :param value: the values to start from, shape ``(S,)``.
        :return: ``(policy, value)``: the greedy action of each state (the lowest-index action
            among equals), shape ``(S,)``, and the final values, shape ``(S,)``.
        """
        _check_gamma_eps(gamma, eps)
        rew = np.asarray(rew, dtype=np.float64)
        if rew.ndim != 2:
            raise ValueError(f"rew must have shape (n_state, n_action), got {rew.shape}")
        n_state, n_action = rew.shape
        _check_shape("trans_prob", trans_prob, (n_state, n_action, n_state))
        _check_shape("value", value, (n_state,))
        if not (np.all(np.isfinite(trans_prob)) and np.all(np.isfinite(rew))):
            raise ValueError("trans_prob and rew must be finite")
        value = np.asarray(value, dtype=np.float64)
        while True:
            q = rew + gamma * (trans_prob @ value)
            new_value = q.max(axis=1)
            converged = np.max(np.abs(new_value - value)) <= eps
            value = new_value
            if converged:
                return q.argmax(axis=1), value


class PSRLPolicy(Policy):
    """Acts greedily in an MDP drawn from the posterior; draws a new one after every update.

    :param trans_count_prior: Dirichlet prior counts of the transitions, ``(S, A, S)``.
    :param rew_mean_prior: prior mean of each pair's mean reward, ``(S, A)``.
    :param rew_std_prior: prior standard deviation of each pair's mean reward, ``(S, A)``.
    :param action_space: a ``Discrete`` space of ``A`` actions starting at 0.
    :param discount_factor: discount factor in [0, 1).
    :param epsilon: value iteration's stopping tolerance.
    :param observation_space: the environment's observation space; if given, a ``Discrete``
        space of ``S`` states starting at 0.
    """

    def __init__(
        self,
        *,
        trans_count_prior: np.ndarray,
        rew_mean_prior: np.ndarray,
        rew_std_prior: np.ndarray,
        action_space: Discrete,
        discount_factor: float = 0.99,
        epsilon: float = 0.01,
        observation_space: gym.Space | None = None,
    ) -> None:
        super().__init__(
            action_space=action_space,
            observation_space=observation_space,
            action_scaling=False,
            action_bound_method=None,
        )
        self.model = PSRLModel(
            trans_count_prior, rew_mean_prior, rew_std_prior, discount_factor, epsilon
        )
        _check_discrete("action_space", action_space, self.model.n_action)
        if observation_space is not None:
            _check_discrete("observation_space", observation_space, self.model.n_state)

    def forward(self, batch: Batch, state: PolicyState = None, **kwargs: Any) -> Batch:
        """The drawn MDP's greedy action for each state in ``batch.obs`` (solving it first if
        the posterior changed since the last draw)."""
        obs = _state_indices("obs", batch.obs, self.model.n_state)
        if not self.model.updated:
            self.model.solve_policy()
        assert self.model.policy is not None
        return Batch(act=self.model.policy[obs], state=state)

    def get_extra_state(self) -> dict[str, np.ndarray]:
        """The posterior's statistics, so that ``state_dict`` checkpoints what was learned."""
        model = self.model
        return {
            "trans_count": model.trans_count,
            "rew_sum": model.rew_sum,
            "rew_square_sum": model.rew_square_sum,
            "rew_count": model.rew_count,
        }

    def set_extra_state(self, state: dict[str, np.ndarray]) -> None:
        """Restore the posterior from a :meth:`get_extra_state` of a model of the same shape."""
        model = self.model
        pair_shape = (model.n_state, model.n_action)
        _check_shape("trans_count", state["trans_count"], (*pair_shape, model.n_state))
        for name in ("rew_sum", "rew_square_sum", "rew_count"):
            _check_shape(name, state[name], pair_shape)
        model.trans_count = np.array(state["trans_count"], dtype=np.float64)
        model.rew_sum = np.array(state["rew_sum"], dtype=np.float64)
        model.rew_square_sum = np.array(state["rew_square_sum"], dtype=np.float64)
        model.rew_count = np.array(state["rew_count"], dtype=np.float64)
        model.rew_mean, model.rew_std = model._reward_posterior()
        model.updated = False


class PSRL(OnPolicyAlgorithm[PSRLPolicy]):
    """Posterior sampling RL: each update adds the collected transitions to the posterior.

    Every transition is counted exactly once, so the update ignores ``batch_size`` and
    ``repeat``. Collect whole episodes per update (``collection_step_num_episodes``) to follow
    the paper's schedule of one drawn MDP per episode.

    :param policy: the PSRL policy, holding the posterior.
    :param add_done_loop: treat every state in which an episode terminated as absorbing: each
        termination also counts one self-loop with reward 0 for every action there. Without it,
        terminal states keep their prior and can look valuable in a draw. Truncated episodes do
        not count, since their last state is not terminal.
    """

    def __init__(self, *, policy: PSRLPolicy, add_done_loop: bool = False) -> None:
        super().__init__(policy=policy)
        self._add_done_loop = add_done_loop

    def _update_with_batch(
        self, batch: Batch, batch_size: int | None, repeat: int
    ) -> PSRLTrainingStats:
        model = self.policy.model
        n_state, n_action = model.n_state, model.n_action
        obs = _state_indices("obs", batch.obs, n_state)
        obs_next = _state_indices("obs_next", batch.obs_next, n_state)
        act = _state_indices("act", batch.act, n_action)
        rew = np.asarray(batch.rew, dtype=np.float64)
        trans_count = np.zeros((n_state, n_action, n_state))
        np.add.at(trans_count, (obs, act, obs_next), 1.0)
        pair = obs * n_action + act
        size = n_state * n_action
        rew_sum = np.bincount(pair, weights=rew, minlength=size).reshape(n_state, n_action)
        rew_square_sum = np.bincount(pair, weights=rew**2, minlength=size)
        rew_count = np.bincount(pair, minlength=size).astype(np.float64)
        rew_count = rew_count.reshape(n_state, n_action)
        if self._add_done_loop:
            terminal = np.asarray(batch.terminated, dtype=bool)
            loops = np.bincount(obs_next[terminal], minlength=n_state).astype(np.float64)
            states = np.arange(n_state)
            trans_count[states, :, states] += loops[:, None]
            rew_count += loops[:, None]
        model.observe(trans_count, rew_sum, rew_square_sum.reshape(n_state, n_action), rew_count)
        return PSRLTrainingStats(
            psrl_rew_mean=float(model.rew_mean.mean()), psrl_rew_std=float(model.rew_std.mean())
        )


def _state_indices(name: str, values: Any, n: int) -> np.ndarray:
    """``values`` as a 1-d array of integer indices in ``[0, n)``, or a ValueError naming
    ``name`` (PSRL is tabular: observations and actions must be ``Discrete`` indices)."""
    array = np.asarray(values)
    if array.ndim == 2 and array.shape[1] == 1:
        array = array[:, 0]
    if array.ndim != 1 or not np.issubdtype(array.dtype, np.integer):
        raise ValueError(
            f"PSRL needs {name} as a batch of integer indices (a Discrete space), got an array "
            f"of shape {array.shape} and dtype {array.dtype}"
        )
    if array.size and (array.min() < 0 or array.max() >= n):
        raise ValueError(
            f"{name} must lie in [0, {n}), got values in [{array.min()}, {array.max()}]"
        )
    return array


def _check_shape(name: str, array: np.ndarray, shape: tuple[int, ...]) -> None:
    if np.shape(array) != shape:
        raise ValueError(f"{name} must have shape {shape}, got {np.shape(array)}")


def _check_gamma_eps(gamma: float, eps: float) -> None:
    if not 0.0 <= gamma < 1.0:
        raise ValueError(f"the discount factor must lie in [0, 1) for value iteration, got {gamma}")
    if not eps > 0:
        raise ValueError(f"epsilon (value iteration's tolerance) must be positive, got {eps}")


def _check_discrete(name: str, space: gym.Space, n: int) -> None:
    if not isinstance(space, Discrete) or space.start != 0 or space.n != n:
        raise ValueError(
            f"PSRL is tabular: {name} must be Discrete({n}) starting at 0 to match the priors' "
            f"shapes, got {space!r}"
        )
