import ast
import time
import warnings
from functools import partial
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch

from test.data.collector_fixtures import (
    ConstantPolicy,
    CountingEnv,
    CountingRecurrentPolicy,
    DataSetEnv,
    EchoActionEnv,
    FiniteDummyVectorEnv,
    FiniteSubprocVectorEnv,
    MLPPolicy,
    NoOpAlgorithm,
    RaggedEnv,
    ScaledPolicy,
)
from tianshou.algorithm.algorithm_base import Policy
from tianshou.data import (
    Batch,
    CachedReplayBuffer,
    PrioritizedReplayBuffer,
    PrioritizedVectorReplayBuffer,
    ReplayBuffer,
    VectorReplayBuffer,
)
from tianshou.data import collector as collector_module
from tianshou.data import collector_base as collector_base_module
from tianshou.data.buffer.buffer_base import MalformedBufferError
from tianshou.data.collector import (
    DEFAULT_BUFFER_MAXSIZE,
    AsyncCollector,
    Collector,
    CollectorBufferError,
    CollectStats,
    EpisodeRolloutHookMCReturn,
    EpisodeRolloutHookMerged,
    StepHookAddActionDistribution,
    get_stddev_from_dist,
)
from tianshou.env.venvs import DummyVectorEnv, ShmemVectorEnv, SubprocVectorEnv

DISCRETE = gym.spaces.Discrete(2)


def counting_venv(lengths: list[int], **kwargs: Any) -> DummyVectorEnv:
    return DummyVectorEnv(
        [partial(CountingEnv, length, i, **kwargs) for i, length in enumerate(lengths)]
    )


def episodes_of(buffer: ReplayBuffer) -> list[list[float]]:
    """The observed step counters of each stored episode, in storage order per sub-buffer."""
    batch = buffer[:]
    episodes, current = [], []
    for t, done in zip(batch.obs[:, 0], batch.done, strict=True):
        current.append(float(t))
        if done:
            episodes.append(current)
            current = []
    return episodes


# ------------------------------------------------------------------ one env, exact contents
def test_one_env_n_step_stores_every_transition_exactly() -> None:
    collector = Collector(ConstantPolicy(DISCRETE), counting_venv([4]), ReplayBuffer(20))
    collector.reset()
    stats = collector.collect(n_step=10)
    buf = collector.buffer
    assert len(buf) == 10
    np.testing.assert_array_equal(buf.obs[:10, 0], [0, 1, 2, 3, 0, 1, 2, 3, 0, 1])
    np.testing.assert_array_equal(buf.obs_next[:10, 0], [1, 2, 3, 4, 1, 2, 3, 4, 1, 2])
    np.testing.assert_array_equal(buf.act[:10], np.ones(10))
    np.testing.assert_array_equal(buf.rew[:10], [2, 3, 4, 5, 2, 3, 4, 5, 2, 3])
    np.testing.assert_array_equal(np.flatnonzero(buf.done[:10]), [3, 7])
    np.testing.assert_array_equal(buf.terminated[:10], buf.done[:10])
    assert not buf.truncated[:10].any()
    np.testing.assert_array_equal(buf.info.t[:10], buf.obs_next[:10, 0])
    np.testing.assert_array_equal(buf.info.env_id[:10], np.zeros(10))
    np.testing.assert_array_equal(buf.policy.twice_t[:10], 2 * buf.obs[:10, 0])
    assert stats.n_collected_steps == 10
    assert stats.n_collected_episodes == 2
    np.testing.assert_array_equal(stats.returns, [14.0, 14.0])
    np.testing.assert_array_equal(stats.lens, [4, 4])
    assert stats.returns_stat is not None and stats.returns_stat.mean == 14.0
    assert stats.collect_time > 0 and stats.collect_speed > 0


def test_n_step_continues_running_episodes_across_calls() -> None:
    collector = Collector(ConstantPolicy(DISCRETE), counting_venv([4]), ReplayBuffer(20))
    collector.reset()
    first = collector.collect(n_step=3)
    second = collector.collect(n_step=3)
    assert first.n_collected_episodes == 0 and first.returns_stat is None
    assert second.n_collected_episodes == 1
    np.testing.assert_array_equal(second.lens, [4])  # the episode began in the first call
    np.testing.assert_array_equal(collector.buffer.obs[:6, 0], [0, 1, 2, 3, 0, 1])
    assert (collector.collect_step, collector.collect_episode) == (6, 1)


def test_four_envs_store_each_env_in_its_own_subbuffer() -> None:
    lengths = [1, 2, 3, 4]
    collector = Collector(
        ConstantPolicy(DISCRETE), counting_venv(lengths), VectorReplayBuffer(40, 4)
    )
    collector.reset()
    stats = collector.collect(n_step=24)
    assert stats.n_collected_steps == 24
    buf = collector.buffer
    for i, length in enumerate(lengths):
        sub = buf.buffers[i]
        assert len(sub) == 6
        np.testing.assert_array_equal(sub.obs[:6, 0], np.arange(6) % length)
        np.testing.assert_array_equal(sub.obs[:6, 1], np.full(6, i))
        np.testing.assert_array_equal(sub.info.env_id[:6], np.full(6, i))
    assert stats.n_collected_episodes == 6 + 3 + 2 + 1
    assert sorted(stats.lens.tolist()) == sorted([1] * 6 + [2] * 3 + [3] * 2 + [4])


def test_n_step_overshoots_to_a_multiple_of_env_num_with_a_warning() -> None:
    collector = Collector(
        ConstantPolicy(DISCRETE), counting_venv([9] * 4), VectorReplayBuffer(40, 4)
    )
    collector.reset()
    with pytest.warns(UserWarning, match="not a multiple"):
        stats = collector.collect(n_step=5)
    assert stats.n_collected_steps == 8
    assert len(collector.buffer) == 8
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert collector.collect(n_step=4).n_collected_steps == 4


# ------------------------------------------------------------------ episode-unbiased collection
def test_n_episode_takes_one_episode_per_env_when_envs_suffice() -> None:
    collector = Collector(
        ConstantPolicy(DISCRETE), counting_venv([1, 2, 3, 4]), VectorReplayBuffer(40, 4)
    )
    collector.reset()
    stats = collector.collect(n_episode=4)
    np.testing.assert_array_equal(stats.lens, [1, 2, 3, 4])
    assert stats.n_collected_steps == 10
    assert [len(b) for b in collector.buffer.buffers] == [1, 2, 3, 4]


def test_n_episode_below_env_num_uses_only_the_first_envs() -> None:
    collector = Collector(
        ConstantPolicy(DISCRETE), counting_venv([1, 2, 3, 4]), VectorReplayBuffer(40, 4)
    )
    collector.reset()
    stats = collector.collect(n_episode=2)
    np.testing.assert_array_equal(stats.lens, [1, 2])
    assert [len(b) for b in collector.buffer.buffers] == [1, 2, 0, 0]


def test_n_episode_retires_finished_envs_once_episodes_run_short() -> None:
    # step 1: env0 ends; step 2: env0, env1 end (3 done, 3 left, 4 running: env0 retired);
    # step 3: env2 ends (4 done, 2 left, 3 running: env2 retired); step 4: env1, env3 end
    collector = Collector(
        ConstantPolicy(DISCRETE), counting_venv([1, 2, 3, 4]), VectorReplayBuffer(40, 4)
    )
    collector.reset()
    stats = collector.collect(n_episode=6)
    np.testing.assert_array_equal(stats.lens, [1, 1, 2, 3, 2, 4])
    assert stats.n_collected_episodes == 6
    assert [len(b) for b in collector.buffer.buffers] == [2, 4, 3, 4]
    assert all(
        collector.buffer.buffers[i].done[len(b) - 1] for i, b in enumerate(collector.buffer.buffers)
    )


def test_n_episode_resets_all_envs_afterwards() -> None:
    collector = Collector(
        ConstantPolicy(DISCRETE), counting_venv([3, 5]), VectorReplayBuffer(40, 2)
    )
    collector.reset()
    collector.collect(n_episode=1)
    stats = collector.collect(n_step=2)
    np.testing.assert_array_equal(collector.buffer.buffers[1].obs[:1, 0], [0])  # fresh episode
    assert stats.n_collected_steps == 2


# ------------------------------------------------------------------ actions
def test_raw_action_is_stored_and_mapped_action_is_executed() -> None:
    env = DummyVectorEnv([EchoActionEnv])
    collector = Collector(
        ScaledPolicy(EchoActionEnv().action_space, raw=0.5), env, ReplayBuffer(10)
    )
    collector.reset()
    collector.collect(n_step=3)
    np.testing.assert_allclose(collector.buffer.act[:3, 0], [0.5] * 3)
    np.testing.assert_allclose(collector.buffer.rew[:3], [1.0] * 3)  # 0.5 scaled to [-2, 2]


def test_random_collection_stores_inverse_mapped_sampled_actions() -> None:
    envs = DummyVectorEnv([EchoActionEnv, EchoActionEnv])
    envs.seed(3)
    policy = ScaledPolicy(EchoActionEnv().action_space)
    collector = Collector(policy, envs, VectorReplayBuffer(100, 2))
    collector.reset()
    collector.collect(n_step=40, random=True)
    batch = collector.buffer[:]
    np.testing.assert_allclose(batch.act[:, 0] * 2.0, batch.rew, rtol=1e-5, atol=1e-6)
    assert np.abs(batch.act).max() <= 1.0
    assert len(np.unique(batch.rew)) > 30  # really sampled


class MaskedEnv(gym.Env):
    """Every observation allows a different random half of 4 actions (``obs["mask"]``), none
    after ``dead_end_at`` steps; an illegal action raises, as a board game's rules would."""

    def __init__(self, dead_end_at: int | None = None) -> None:
        self.observation_space = gym.spaces.Dict(
            {"obs": gym.spaces.Box(0.0, 1.0, (1,)), "mask": gym.spaces.MultiBinary(4)}
        )
        self.action_space = gym.spaces.Discrete(4)
        self.dead_end_at = dead_end_at
        self.mask = np.ones(4, dtype=bool)
        self.steps = 0

    def _observe(self) -> dict[str, np.ndarray]:
        self.mask = np.zeros(4, dtype=bool)
        if self.steps != self.dead_end_at:
            self.mask[self.np_random.permutation(4)[:2]] = True
        return {"obs": np.zeros(1, dtype=np.float32), "mask": self.mask.copy()}

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        super().reset(seed=seed)
        self.steps = 0
        return self._observe(), {}

    def step(self, action: int) -> tuple[dict, float, bool, bool, dict]:
        if not self.mask[action]:
            raise ValueError(f"illegal action {action}")
        self.steps += 1
        return self._observe(), 0.0, False, self.steps == 10, {}


@pytest.mark.parametrize("collector_cls", [Collector, AsyncCollector])
def test_random_collection_draws_only_legal_actions_of_masked_observations(
    collector_cls: type[Collector],
) -> None:
    wait_num = {"wait_num": 1} if collector_cls is AsyncCollector else {}
    envs = DummyVectorEnv([MaskedEnv for _ in range(3)], **wait_num)
    envs.seed(0)
    collector = collector_cls(
        ConstantPolicy(gym.spaces.Discrete(4)), envs, VectorReplayBuffer(600, 3)
    )
    collector.reset()
    collector.collect(n_step=300, random=True)  # MaskedEnv raises on an illegal action
    batch = collector.buffer[:]
    assert batch.obs.mask[np.arange(len(batch)), batch.act].all()
    assert np.bincount(batch.act, minlength=4).min() > 40  # every action, when legal, is drawn


def test_random_collection_names_the_env_whose_mask_allows_nothing() -> None:
    envs = DummyVectorEnv([MaskedEnv, partial(MaskedEnv, dead_end_at=2)])
    collector = Collector(ConstantPolicy(gym.spaces.Discrete(4)), envs, VectorReplayBuffer(60, 2))
    collector.reset()
    with pytest.raises(ValueError, match=r"row 1 \(env_id 1\) allows no action"):
        collector.collect(n_step=20, random=True)


def test_exploration_noise_is_applied_before_storing() -> None:
    class NoisyPolicy(ConstantPolicy):
        def add_exploration_noise(self, act: Any, batch: Batch) -> Any:
            return 1 - act

    collector = Collector(
        NoisyPolicy(DISCRETE, value=1), counting_venv([5]), ReplayBuffer(10), exploration_noise=True
    )
    collector.reset()
    collector.collect(n_step=2)
    np.testing.assert_array_equal(collector.buffer.act[:2], [0, 0])
    np.testing.assert_array_equal(collector.buffer.rew[:2], [1, 2])


# ------------------------------------------------------------------ policy execution
def test_policy_runs_in_eval_mode_without_gradients_and_mode_is_restored() -> None:
    policy = ConstantPolicy(DISCRETE)
    policy.train()
    collector = Collector(NoOpAlgorithm(policy=policy), counting_venv([3]), ReplayBuffer(10))
    assert collector.policy is policy
    collector.reset()
    collector.collect(n_step=3)
    assert policy.calls and all(call == (False, False) for call in policy.calls)
    assert policy.training


def test_recurrent_state_is_kept_per_env_and_cleared_on_reset() -> None:
    collector = Collector(
        CountingRecurrentPolicy(DISCRETE), counting_venv([2, 3]), VectorReplayBuffer(40, 2)
    )
    collector.reset()
    stats = collector.collect(n_step=12)
    for i, length in enumerate([2, 3]):
        sub = collector.buffer.buffers[i]
        hidden = sub.policy.hidden_state[: len(sub), 0]
        np.testing.assert_array_equal(hidden, np.arange(len(sub)) % length + 1)
    assert stats.pred_dist_std_array is not None
    assert stats.pred_dist_std_array.shape == (12, 1)
    np.testing.assert_allclose(stats.pred_dist_std_array, 0.5)  # uniform over {0, 1}
    assert stats.pred_dist_std_array_stat is not None
    assert stats.pred_dist_std_array_stat[0].mean == pytest.approx(0.5)


class _ObsDrivenDistPolicy(Policy):
    """Acts with a distribution that depends on the observation: a Categorical with varying
    probabilities, or (for observations at or above ``switch_from``) another one, by
    ``switch_to``: a Normal, one-dimensional ``Independent`` Gaussians or a Categorical over
    three actions. The collector's statistics then see changing spreads and a change of
    distribution type or width."""

    def __init__(
        self, action_space: gym.Space, switch_from: float = np.inf, switch_to: str = "normal"
    ) -> None:
        super().__init__(action_space=action_space)
        self.switch_from, self.switch_to = switch_from, switch_to

    def forward(self, batch: Batch, state: Any = None, **kwargs: Any) -> Batch:
        obs = torch.as_tensor(batch.obs, dtype=torch.float32).reshape(len(batch.obs), -1)[:, :1]
        dist: torch.distributions.Distribution
        if float(obs.max()) >= self.switch_from:
            if self.switch_to == "normal":
                dist = torch.distributions.Normal(obs, 1.0 + obs)
            elif self.switch_to == "gaussian":
                dist = torch.distributions.Independent(
                    torch.distributions.Normal(-obs, 2.0 + obs), 1
                )
            else:
                dist = torch.distributions.Categorical(logits=torch.cat([obs, -obs, obs / 2], 1))
        else:
            dist = torch.distributions.Categorical(logits=torch.cat([obs / 3, -obs / 7], dim=1))
        return Batch(act=torch.zeros(len(obs), dtype=torch.long), dist=dist)


@pytest.mark.parametrize(
    ("switch_from", "switch_to"),
    [(np.inf, "normal"), (4.0, "normal"), (4.0, "gaussian"), (4.0, "wider")],
)
def test_distribution_spreads_are_those_of_every_step_in_order(
    switch_from: float, switch_to: str
) -> None:
    policy = _ObsDrivenDistPolicy(DISCRETE, switch_from, switch_to)
    collector = Collector(policy, counting_venv([3, 5, 6]), VectorReplayBuffer(300, 3))
    collector.reset()
    stats = collector.collect(n_step=150)
    buffer = collector.buffer
    expected = []  # step by step, as CollectStats.update_at_step_batch records them
    for step in range(50):
        obs = np.stack([buffer.buffers[i].obs[step] for i in range(3)])
        dist = policy(Batch(obs=obs, info=Batch())).dist
        expected.append(get_stddev_from_dist(dist).reshape(3, -1).numpy())
    assert stats.pred_dist_std_array is not None
    np.testing.assert_array_equal(stats.pred_dist_std_array, np.concatenate(expected))
    assert stats.n_collected_steps == 150


def test_hidden_state_survives_between_n_step_calls() -> None:
    collector = Collector(CountingRecurrentPolicy(DISCRETE), counting_venv([10]), ReplayBuffer(20))
    collector.reset()
    collector.collect(n_step=2)
    collector.collect(n_step=2)
    np.testing.assert_array_equal(collector.buffer.policy.hidden_state[:4, 0], [1, 2, 3, 4])


def test_dict_observations_are_stored_as_batches() -> None:
    collector = Collector(
        ConstantPolicy(DISCRETE), counting_venv([3, 2], dict_obs=True), VectorReplayBuffer(20, 2)
    )
    collector.reset()
    collector.collect(n_step=6)
    sub0, sub1 = collector.buffer.buffers
    np.testing.assert_array_equal(sub0.obs.t[:3], [0, 1, 2])
    np.testing.assert_array_equal(sub1.obs.t[:3], [0, 1, 0])
    np.testing.assert_array_equal(sub1.obs.index[:3, 0], [1, 1, 1])
    np.testing.assert_array_equal(sub1.obs_next.t[:3], [1, 2, 1])
    np.testing.assert_array_equal(sub0.policy.twice_t[:3], [0, 2, 4])


def test_ragged_observations_are_stored_per_row() -> None:
    envs = DummyVectorEnv([partial(RaggedEnv, 0), partial(RaggedEnv, 1)])
    collector = Collector(ConstantPolicy(DISCRETE), envs, VectorReplayBuffer(20, 2))
    collector.reset()
    stats = collector.collect(n_episode=3)
    np.testing.assert_array_equal(stats.lens, [3, 3, 3])
    for offset, sub in enumerate(collector.buffer.buffers):
        batch = sub[:]
        for t, (obs, obs_next) in enumerate(zip(batch.obs, batch.obs_next, strict=True)):
            np.testing.assert_array_equal(obs, np.arange(t % 3 + offset + 1))
            np.testing.assert_array_equal(obs_next, np.arange(t % 3 + offset + 2))


def test_cartpole_with_mlp_policy_matches_a_manual_rollout() -> None:
    env = gym.make("CartPole-v1")
    policy = MLPPolicy(4, env.action_space)
    collector = Collector(
        policy, DummyVectorEnv([lambda: gym.make("CartPole-v1")]), ReplayBuffer(300)
    )
    collector.reset(gym_reset_kwargs={"seed": 5})
    stats = collector.collect(n_episode=1)
    obs, _ = env.reset(seed=5)
    observations, done = [obs], False
    while not done:
        with torch.no_grad():
            act = int(policy(Batch(obs=obs[None], info=Batch())).act[0])
        obs, _, terminated, truncated, _ = env.step(act)
        done = terminated or truncated
        observations.append(obs)
    assert stats.lens.tolist() == [len(observations) - 1]
    np.testing.assert_allclose(collector.buffer.obs[: stats.lens[0]], observations[:-1])
    np.testing.assert_allclose(collector.buffer.obs_next[stats.lens[0] - 1], observations[-1])


# ------------------------------------------------------------------ backends
@pytest.mark.parametrize("venv_cls", [SubprocVectorEnv, ShmemVectorEnv])
def test_backends_collect_identical_data(venv_cls: type) -> None:
    def collect(cls: type) -> Batch:
        envs = cls([lambda: gym.make("CartPole-v1") for _ in range(3)])
        envs.seed(7)
        collector = Collector(
            MLPPolicy(4, gym.spaces.Discrete(2)), envs, VectorReplayBuffer(300, 3)
        )
        collector.reset()
        collector.collect(n_step=60)
        collector.collect(n_step=30, random=True)
        envs.close()
        return collector.buffer[:]

    reference, other = collect(DummyVectorEnv), collect(venv_cls)
    for key in ("obs", "act", "rew", "terminated", "truncated", "obs_next"):
        np.testing.assert_array_equal(reference[key], other[key], err_msg=key)
    np.testing.assert_array_equal(reference.info.env_id, other.info.env_id)


@pytest.mark.filterwarnings("ignore:.*precision lowered")
def test_envpool_env_plugs_in_directly() -> None:
    import envpool

    envs = envpool.make("CartPole-v1", env_type="gymnasium", num_envs=3, seed=1)
    collector = Collector(MLPPolicy(4, envs.action_space), envs, VectorReplayBuffer(300, 3))
    collector.reset()
    stats = collector.collect(n_episode=4)
    assert stats.n_collected_episodes == 4
    assert stats.n_collected_steps == len(collector.buffer) == stats.lens.sum()
    random_stats = collector.collect(n_step=30, random=True)
    assert random_stats.n_collected_steps == 30
    np.testing.assert_array_equal(np.unique(collector.buffer[:].info.env_id), [0, 1, 2])


# ------------------------------------------------------------------ buffers
def test_default_buffer_has_one_subbuffer_per_env() -> None:
    collector = Collector(ConstantPolicy(DISCRETE), counting_venv([3, 3, 3]))
    assert isinstance(collector.buffer, VectorReplayBuffer)
    assert collector.buffer.buffer_num == 3
    assert collector.buffer.maxsize == DEFAULT_BUFFER_MAXSIZE * 3


def test_buffer_with_too_few_subbuffers_is_rejected() -> None:
    with pytest.raises(CollectorBufferError, match="buffer_num=2"):
        Collector(ConstantPolicy(DISCRETE), counting_venv([3] * 4), VectorReplayBuffer(40, 2))
    with pytest.raises(AssertionError):
        Collector(ConstantPolicy(DISCRETE), counting_venv([3] * 4), VectorReplayBuffer(40, 2))


@pytest.mark.parametrize(
    "buffer", [ReplayBuffer(40), PrioritizedReplayBuffer(40, alpha=0.6, beta=0.4)]
)
def test_single_buffer_with_several_envs_is_rejected(buffer: ReplayBuffer) -> None:
    with pytest.raises(ValueError, match="VectorReplayBuffer"):
        Collector(ConstantPolicy(DISCRETE), counting_venv([3, 3]), buffer)
    with pytest.raises(TypeError):  # what earlier releases raised
        Collector(ConstantPolicy(DISCRETE), counting_venv([3, 3]), buffer)
    assert Collector(ConstantPolicy(DISCRETE), counting_venv([3]), buffer).buffer is buffer


def test_cached_buffer_receives_whole_episodes() -> None:
    buffer = CachedReplayBuffer(ReplayBuffer(50), 2, 10)
    collector = Collector(ConstantPolicy(DISCRETE), counting_venv([2, 3]), buffer)
    collector.reset()
    stats = collector.collect(n_step=8)
    main = buffer.main_buffer
    assert stats.n_collected_episodes == 3
    assert len(main) == 2 + 3 + 2
    assert episodes_of(main) == [[0, 1], [0, 1, 2], [0, 1]]


@pytest.mark.parametrize("buffer_cls", [VectorReplayBuffer, PrioritizedVectorReplayBuffer])
def test_staged_writes_equal_step_by_step_writes_across_wraparound(buffer_cls: type) -> None:
    class StepwiseBuffer(buffer_cls):
        """A subclass: the collector then adds one step at a time."""

    kwargs = {"alpha": 0.6, "beta": 0.4} if buffer_cls is PrioritizedVectorReplayBuffer else {}

    def collect(buffer: ReplayBuffer) -> Batch:
        collector = Collector(ConstantPolicy(DISCRETE), counting_venv([3, 5, 7]), buffer)
        collector.reset()
        collector.collect(n_step=300)
        if kwargs:
            buffer.update_weight(np.arange(10), np.arange(10.0))  # a learner's update
        collector.collect(n_episode=5)
        batch = buffer[:]
        if kwargs:
            batch.priority = buffer.weight[np.arange(buffer.maxsize)]
        return batch

    staged = collect(buffer_cls(60, 3, **kwargs))
    stepwise = collect(StepwiseBuffer(60, 3, **kwargs))
    for key in ("obs", "act", "rew", "done", "obs_next"):
        np.testing.assert_array_equal(staged[key], stepwise[key])
    np.testing.assert_array_equal(staged.info.t, stepwise.info.t)
    if kwargs:
        np.testing.assert_array_equal(staged.priority, stepwise.priority)


def test_reset_buffer_can_keep_running_episode_statistics() -> None:
    collector = Collector(ConstantPolicy(DISCRETE), counting_venv([4]), ReplayBuffer(20))
    collector.reset()
    collector.collect(n_step=2)
    collector.reset_buffer(keep_statistics=True)
    stats = collector.collect(n_step=2)
    np.testing.assert_array_equal(stats.lens, [4])
    assert len(collector.buffer) == 2


# ------------------------------------------------------------------ errors and lifecycle
def test_collect_before_reset_raises() -> None:
    collector = Collector(ConstantPolicy(DISCRETE), counting_venv([3]))
    with pytest.raises(ValueError, match="reset"):
        collector.collect(n_step=1)
    assert collector.collect(n_step=1, reset_before_collect=True).n_collected_steps == 1


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"n_step": 2, "n_episode": 1}, {"n_step": 0}, {"n_episode": -1}, {"n_step": 1.5}],
)
def test_collect_needs_exactly_one_positive_count(kwargs: dict) -> None:
    collector = Collector(ConstantPolicy(DISCRETE), counting_venv([3]))
    collector.reset()
    with pytest.raises(ValueError, match=r"n_step|n_episode"):
        collector.collect(**kwargs)
    with pytest.raises(TypeError):  # what earlier releases raised
        collector.collect(**kwargs)


class FakeTime:
    """Stands in for the ``time`` module: every ``monotonic()`` reading is ``tick`` seconds
    after the previous one."""

    def __init__(self, tick: float) -> None:
        self.tick = tick
        self.now = 1000.0

    def monotonic(self) -> float:
        self.now += self.tick
        return self.now


def test_collect_durations_come_from_the_collector_modules_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    collector = Collector(ConstantPolicy(DISCRETE), counting_venv([3]))
    collector.reset()
    monkeypatch.setattr(collector_module, "time", FakeTime(tick=2.5))
    stats = collector.collect(n_step=5)
    assert stats.collect_time == 2.5 and stats.collect_speed == 5 / 2.5
    assert collector.collect_time == 2.5
    collector.collect(n_episode=1)
    assert collector.collect_time == 5.0


def test_the_collector_base_does_not_import_the_collectors_module() -> None:
    """The collectors build on the base, never the other way round (no hidden import cycle)."""
    tree = ast.parse(Path(collector_base_module.__file__).read_text())
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    imported |= {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    assert "tianshou.data.collector" not in imported


def finite_venv(venv_cls: type, n_envs: int, items_per_env: int, length: int, **kwargs: Any) -> Any:
    """A finite vector env over the data set ``0 .. n_envs * items_per_env - 1``."""
    data = list(range(n_envs * items_per_env))
    shards = [partial(DataSetEnv, data[i::n_envs], length) for i in range(n_envs)]
    return venv_cls(shards, **kwargs)


@pytest.mark.parametrize("venv_cls", [FiniteDummyVectorEnv, FiniteSubprocVectorEnv])
@pytest.mark.parametrize("count", ["n_step", "n_episode"])
def test_finite_env_stop_iteration_passes_through_and_the_next_collect_continues(
    venv_cls: type, count: str
) -> None:
    n_envs, items_per_env, length = 2, 3, 2
    envs = finite_venv(venv_cls, n_envs, items_per_env, length)
    collector = Collector(ConstantPolicy(DISCRETE), envs, VectorReplayBuffer(200, n_envs))
    collector.reset()
    with pytest.raises(StopIteration) as caught:
        collector.collect(**{count: 10**6})
    assert type(caught.value) is StopIteration
    assert caught.value.args == ("the data set is exhausted",)
    assert not getattr(caught.value, "__notes__", None)  # unchanged
    first_pass = collector.buffer[:]
    items = n_envs * items_per_env
    assert sorted(first_pass.info.item.tolist()) == sorted(np.repeat(np.arange(items), length))
    assert int(first_pass.done.sum()) == items
    assert collector.collect_step == items * length and collector.collect_episode == items
    resets = envs.reset_calls
    stats = collector.collect(n_step=n_envs)  # no reset(): the next pass has begun in the envs
    assert envs.reset_calls == resets
    assert stats.n_collected_steps == n_envs
    second_pass = collector.buffer[np.arange(n_envs) * 100 + items_per_env * length]
    assert second_pass.info.item.tolist() == list(range(n_envs))  # each shard's first item
    envs.close()


def test_async_collector_lets_a_finite_env_stop_iteration_through_and_continues() -> None:
    envs = finite_venv(FiniteDummyVectorEnv, 2, 3, 2, wait_num=1)
    collector = AsyncCollector(ConstantPolicy(DISCRETE), envs, VectorReplayBuffer(200, 2))
    collector.reset()
    with pytest.raises(StopIteration, match="exhausted"):
        collector.collect(n_step=10**6)
    first_pass = collector.buffer[:]
    assert sorted(first_pass.info.item.tolist()) == sorted(np.repeat(np.arange(6), 2))
    assert collector.collect(n_step=2).n_collected_steps >= 2
    assert collector.buffer[np.array([6, 106])].info.item.tolist() == [0, 1]


def test_stop_iteration_outside_an_env_reset_needs_a_reset() -> None:
    class ExhaustedPolicy(ConstantPolicy):
        def forward(self, batch: Batch, state: Any = None, **kwargs: Any) -> Batch:
            raise StopIteration("not from an env reset")

    collector = Collector(ExhaustedPolicy(DISCRETE), counting_venv([3]))
    collector.reset()
    with pytest.raises(StopIteration):
        collector.collect(n_step=1)
    with pytest.raises(ValueError, match="reset"):
        collector.collect(n_step=1)


def test_bare_gym_env_is_wrapped_with_a_warning() -> None:
    with pytest.warns(UserWarning, match="DummyVectorEnv"):
        collector = Collector(ConstantPolicy(DISCRETE), CountingEnv(3))
    assert isinstance(collector.env, DummyVectorEnv)
    collector.reset()
    assert collector.collect(n_episode=2).lens.tolist() == [3, 3]


def test_asynchronous_env_needs_the_async_collector() -> None:
    envs = DummyVectorEnv([partial(CountingEnv, 3)] * 2, wait_num=1)
    with pytest.raises(ValueError, match="AsyncCollector"):
        Collector(ConstantPolicy(DISCRETE), envs, VectorReplayBuffer(10, 2))


def test_non_policy_is_rejected() -> None:
    with pytest.raises(TypeError, match="Policy"):
        Collector(object(), counting_venv([3]))


def test_closed_collector_cannot_collect() -> None:
    collector = Collector(ConstantPolicy(DISCRETE), counting_venv([3]))
    collector.reset()
    collector.close()
    with pytest.raises(ValueError, match="reset"):
        collector.collect(n_step=1)


def test_failed_collection_leaves_no_stale_transitions() -> None:
    class FailingEnv(CountingEnv):
        failures = 1

        def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
            if self.t == 2 and FailingEnv.failures:
                FailingEnv.failures -= 1
                raise RuntimeError("boom")
            return super().step(action)

    collector = Collector(ConstantPolicy(DISCRETE), DummyVectorEnv([partial(FailingEnv, 5)]))
    collector.reset()
    with pytest.raises(RuntimeError, match="boom"):
        collector.collect(n_step=4)
    collector.reset()
    collector.collect(n_step=3)
    np.testing.assert_array_equal(collector.buffer[:].obs[:, 0], [0, 1, 2])


def test_reset_stat_zeroes_lifetime_counters() -> None:
    collector = Collector(ConstantPolicy(DISCRETE), counting_venv([2]))
    collector.reset()
    collector.collect(n_step=4)
    assert (collector.collect_step, collector.collect_episode) == (4, 2)
    assert collector.collect_time > 0
    collector.reset_stat()
    assert (collector.collect_step, collector.collect_episode, collector.collect_time) == (0, 0, 0)


def test_nan_in_buffer_raises_when_checking_is_enabled() -> None:
    class NaNPolicy(ConstantPolicy):
        def forward(self, batch: Batch, state: Any = None, **kwargs: Any) -> Batch:
            result = super().forward(batch, state)
            result.policy.twice_t[:] = np.nan
            return result

    collector = Collector(
        NaNPolicy(DISCRETE), counting_venv([3]), ReplayBuffer(10), raise_on_nan_in_buffer=True
    )
    collector.reset()
    with pytest.raises(MalformedBufferError, match=r"policy\.twice_t"):
        collector.collect(n_step=2)


# ------------------------------------------------------------------ hooks and stats
def test_episode_hook_adds_monte_carlo_returns_to_each_episode() -> None:
    collector = Collector(
        ConstantPolicy(DISCRETE),
        counting_venv([2, 3]),
        VectorReplayBuffer(20, 2),
        on_episode_done_hook=EpisodeRolloutHookMCReturn(gamma=0.5),
    )
    collector.reset()
    collector.collect(n_episode=2)
    sub0, sub1 = collector.buffer.buffers
    # env 0 rewards 2, 3; env 1 rewards 2, 3, 4
    np.testing.assert_allclose(sub0.mc_return_to_go[:2], [2 + 0.5 * 3, 3])
    np.testing.assert_allclose(sub1.mc_return_to_go[:3], [2 + 0.5 * 3 + 0.25 * 4, 3 + 0.5 * 4, 4])
    np.testing.assert_allclose(sub1.full_episode_mc_return[:3], [4.5] * 3)


def test_merged_episode_hooks_reject_overlapping_keys() -> None:
    hook = EpisodeRolloutHookMCReturn(0.9)
    batch = Batch(rew=np.array([1.0, 1.0]))
    with pytest.raises(KeyError, match="mc_return_to_go"):
        EpisodeRolloutHookMerged(hook, hook)(batch)
    merged = EpisodeRolloutHookMerged(hook, lambda ep: {"twice": 2 * ep.rew})(batch)
    np.testing.assert_allclose(merged["mc_return_to_go"], [1.9, 1.0])
    np.testing.assert_allclose(merged["twice"], [2.0, 2.0])
    as_list = EpisodeRolloutHookMerged([hook], check_overlapping_keys=False)(batch)
    assert set(as_list) == {"mc_return_to_go", "full_episode_mc_return"}


def test_step_hooks_see_both_batches_and_can_add_keys() -> None:
    seen: list[tuple[Any, Any]] = []

    def hook(action_batch: Batch, rollout_batch: Batch) -> None:
        seen.append((action_batch.act.copy(), rollout_batch.obs.copy()))
        rollout_batch.extra = rollout_batch.obs[:, 0] + 100

    collector = Collector(
        ConstantPolicy(DISCRETE),
        counting_venv([3, 3]),
        VectorReplayBuffer(20, 2),
        on_step_hook=hook,
    )
    collector.reset()
    collector.collect(n_step=4)
    assert len(seen) == 2
    np.testing.assert_array_equal(seen[1][1][:, 0], [1, 1])
    np.testing.assert_array_equal(collector.buffer.buffers[0].extra[:2], [100, 101])


def test_action_distribution_hook_stores_one_distribution_per_step() -> None:
    collector = Collector(
        CountingRecurrentPolicy(DISCRETE),
        counting_venv([3]),
        ReplayBuffer(10),
        on_step_hook=StepHookAddActionDistribution(),
    )
    collector.reset()
    collector.collect(n_step=3)
    dists = collector.buffer.action_dist[:3]
    assert all(isinstance(d, torch.distributions.Categorical) for d in dists)
    torch.testing.assert_close(dists[0].probs, torch.tensor([0.5, 0.5]))


def test_custom_stats_class_receives_episode_batches() -> None:
    class EpisodeStats(CollectStats):
        episode_obs: list

        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.episode_obs = []

        def update_at_episode_done(
            self, episode_batch: Batch, episode_return: Any, refresh_sequence_stats: bool = False
        ) -> None:
            super().update_at_episode_done(episode_batch, episode_return, refresh_sequence_stats)
            self.episode_obs.append(episode_batch.obs[:, 0].tolist())

    collector = Collector[EpisodeStats](
        ConstantPolicy(DISCRETE),
        counting_venv([2]),
        ReplayBuffer(20),
        collect_stats_class=EpisodeStats,
    )
    collector.reset()
    stats = collector.collect(n_step=5)
    assert isinstance(stats, EpisodeStats)
    assert stats.episode_obs == [[0, 1], [0, 1]]
    np.testing.assert_array_equal(stats.lens, [2, 2])


def test_hooks_can_be_installed_read_back_and_removed() -> None:
    collector = Collector(ConstantPolicy(DISCRETE), counting_venv([2]), ReplayBuffer(20))
    assert collector.get_on_step_hook() is None
    assert collector.run_on_episode_done(Batch(rew=np.ones(2))) is None
    episode_hook, step_hook = EpisodeRolloutHookMCReturn(gamma=1.0), StepHookAddActionDistribution()
    collector.set_on_episode_done_hook(episode_hook)
    collector.set_on_step_hook(step_hook)
    assert collector.get_on_episode_done_hook() is episode_hook
    assert collector.get_on_step_hook() is step_hook
    collector.reset()
    collector.collect(n_episode=1)
    np.testing.assert_array_equal(collector.buffer.mc_return_to_go[:2], [5.0, 3.0])  # rew 2, 3
    collector.set_on_episode_done_hook(None)
    collector.set_on_step_hook(None)
    assert collector.get_on_episode_done_hook() is None
    assert collector.get_on_step_hook() is None


def test_render_draws_after_every_step_and_pauses() -> None:
    class RenderedEnv(CountingEnv):
        renders = 0

        def render(self) -> None:
            RenderedEnv.renders += 1

    collector = Collector(ConstantPolicy(DISCRETE), DummyVectorEnv([partial(RenderedEnv, 2)]))
    collector.reset()
    start = time.perf_counter()
    collector.collect(n_step=3, render=0.02)
    assert RenderedEnv.renders == 3
    assert time.perf_counter() - start >= 0.05


def test_policy_entry_may_be_a_dict_but_nothing_else() -> None:
    class DictEntryPolicy(ConstantPolicy):
        def __init__(self, entry_type: type) -> None:
            super().__init__(DISCRETE)
            self.entry_type = entry_type

        def forward(self, batch: Batch, state: Any = None, **kwargs: Any) -> Batch:
            t = np.asarray(batch.obs)[:, 0]
            entry = {"t": t} if self.entry_type is dict else list(t)
            return Batch(act=np.ones(len(t), dtype=np.int64), policy=entry)

    collector = Collector(DictEntryPolicy(dict), counting_venv([3]), ReplayBuffer(10))
    collector.reset()
    collector.collect(n_step=2)
    np.testing.assert_array_equal(collector.buffer.policy.t[:2], [0, 1])
    collector = Collector(DictEntryPolicy(list), counting_venv([3]), ReplayBuffer(10))
    collector.reset()
    with pytest.raises(TypeError, match=r"'policy' entry .* Batch or dict"):
        collector.collect(n_step=1)
