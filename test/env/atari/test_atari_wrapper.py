"""DeepMind-style Atari wrappers, make_atari_env and the Atari env factory.

Exact checks run on :class:`ScriptedAtariEnv`, whose frames, rewards and lives are known
functions of the frame number; the rest on real ALE games (Pong, Breakout) with fixed seeds,
through gymnasium and through EnvPool.
"""

from types import SimpleNamespace
from typing import Any, cast

import cv2
import gymnasium as gym
import numpy as np
import pytest

from tianshou.algorithm import RandomActionPolicy
from tianshou.data import Collector, VectorReplayBuffer
from tianshou.env import DummyVectorEnv, ShmemVectorEnv, SubprocVectorEnv
from tianshou.env.atari import atari_wrapper
from tianshou.env.atari._envpool_venv import EnvPoolAtariVenv, envpool_task
from tianshou.env.atari.atari_wrapper import (
    AtariEnvFactory,
    AtariEpochStopCallback,
    ClipRewardEnv,
    EpisodicLifeEnv,
    FireResetEnv,
    FrameStack,
    MaxAndSkipEnv,
    NoopResetEnv,
    ScaledFloatFrame,
    WarpFrame,
    get_space_dtype,
    make_atari_env,
    wrap_deepmind,
)
from tianshou.env.worker import DummyEnvWorker
from tianshou.highlevel.env import EnvMode, VectorEnvType

PONG = "PongNoFrameskip-v4"
BREAKOUT = "BreakoutNoFrameskip-v4"


class ScriptedAtariEnv(gym.Env):
    """A fake ALE game: frame ``t`` lights pixel ``t`` (mod 16) with value ``10 + t``.

    Reward at frame ``t`` is ``rewards(t)``, lives ``lives(t)``; the game is over at frame
    ``game_len``. Every action taken and every reset is recorded.
    """

    HEIGHT, WIDTH = 4, 4

    def __init__(
        self,
        game_len: int = 1000,
        rewards: Any = float,
        lives: Any = lambda t: 3,
        meanings: tuple[str, ...] = ("NOOP", "FIRE", "RIGHT", "LEFT"),
    ) -> None:
        self.game_len = game_len
        self.rewards = rewards
        self.lives = lives
        self.meanings = list(meanings)
        self.observation_space = gym.spaces.Box(0, 255, (self.HEIGHT, self.WIDTH), np.uint8)
        self.action_space = gym.spaces.Discrete(len(meanings))
        self.t = 0
        self.actions: list[int] = []
        self.num_resets = 0

    @classmethod
    def frame(cls, t: int) -> np.ndarray:
        frame = np.zeros(cls.HEIGHT * cls.WIDTH, dtype=np.uint8)
        frame[t % frame.size] = 10 + t
        return frame.reshape(cls.HEIGHT, cls.WIDTH)

    def get_action_meanings(self) -> list[str]:
        return self.meanings

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple:
        super().reset(seed=seed)
        self.t = 0
        self.num_resets += 1
        return self.frame(0), {"lives": self.lives(0)}

    def step(self, action: int) -> tuple:
        self.actions.append(int(action))
        self.t += 1
        info = {"lives": self.lives(self.t)}
        return self.frame(self.t), self.rewards(self.t), self.t >= self.game_len, False, info


def test_get_space_dtype() -> None:
    assert get_space_dtype(gym.spaces.Box(0, 255, (2,), np.uint8)) is np.integer
    assert get_space_dtype(gym.spaces.Box(0, 1, (2,), np.float32)) is np.floating
    with pytest.raises(TypeError, match="bool"):
        get_space_dtype(gym.spaces.Box(0, 1, (2,), np.bool_))  # type: ignore[arg-type]


def test_noop_reset_takes_between_1_and_noop_max_noops() -> None:
    fake = ScriptedAtariEnv()
    env = NoopResetEnv(fake, noop_max=5)
    counts = []
    env.reset(seed=0)
    for _ in range(200):
        fake.actions.clear()
        obs, _ = env.reset()
        counts.append(len(fake.actions))
        assert set(fake.actions) == {0}
        np.testing.assert_array_equal(obs, fake.frame(counts[-1]))
    assert set(counts) == {1, 2, 3, 4, 5}


def test_noop_reset_count_is_reproducible_with_a_seed() -> None:
    def noop_counts(seed: int) -> list[int]:
        fake = ScriptedAtariEnv()
        env = NoopResetEnv(fake, noop_max=30)
        env.reset(seed=seed)
        counts = [fake.t]
        for _ in range(5):
            env.reset()
            counts.append(fake.t)
        return counts

    assert noop_counts(3) == noop_counts(3)
    assert noop_counts(3) != noop_counts(4)


def test_noop_reset_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="noop_max"):
        NoopResetEnv(ScriptedAtariEnv(), noop_max=0)
    with pytest.raises(ValueError, match="'NOOP'"):
        NoopResetEnv(ScriptedAtariEnv(meanings=("FIRE", "NOOP")))


def test_max_and_skip_repeats_pools_and_sums() -> None:
    fake = ScriptedAtariEnv(game_len=6)
    env = MaxAndSkipEnv(fake, skip=4)
    env.reset()
    obs, reward, terminated, truncated, _ = env.step(2)
    assert fake.actions == [2, 2, 2, 2]
    assert reward == 1 + 2 + 3 + 4
    expected = np.maximum(fake.frame(3), fake.frame(4))
    assert not np.array_equal(expected, fake.frame(4))  # the pool really shows two frames
    np.testing.assert_array_equal(obs, expected)
    assert not terminated and not truncated
    # the game ends at frame 6: the repetition stops there
    obs, reward, terminated, _, _ = env.step(3)
    assert fake.actions == [2, 2, 2, 2, 3, 3]
    assert reward == 5 + 6
    assert terminated
    np.testing.assert_array_equal(obs, np.maximum(fake.frame(5), fake.frame(6)))


def test_max_and_skip_ending_at_the_first_frame_returns_that_frame() -> None:
    fake = ScriptedAtariEnv(game_len=1)
    env = MaxAndSkipEnv(fake, skip=4)
    env.reset()
    obs, reward, terminated, _, _ = env.step(0)
    assert terminated and reward == 1 and fake.actions == [0]
    np.testing.assert_array_equal(obs, fake.frame(1))


def test_episodic_life_ends_episode_at_life_loss_without_resetting_the_game() -> None:
    fake = ScriptedAtariEnv(game_len=10, lives=lambda t: 2 if t < 4 else 1 if t < 10 else 0)
    env = EpisodicLifeEnv(fake)
    _, info = env.reset(seed=0)
    assert info == {"lives": 2, "terminated": False}
    for _ in range(3):
        assert not env.step(2)[2]
    _, _, terminated, _, info = env.step(2)  # frame 4: a life is lost
    assert terminated and not info["terminated"] and info["lives"] == 1
    obs, info = env.reset()
    assert fake.num_resets == 1  # the game goes on ...
    assert fake.actions[-1] == 0  # ... after one no-op
    np.testing.assert_array_equal(obs, fake.frame(5))
    assert info == {"lives": 1, "terminated": False}
    for _ in range(4):
        _, _, terminated, _, info = env.step(2)
    assert not terminated
    _, _, terminated, _, info = env.step(2)  # frame 10: game over
    assert terminated and info["terminated"]
    env.reset()
    assert fake.num_resets == 2


def test_episodic_life_reset_with_seed_restarts_the_game() -> None:
    fake = ScriptedAtariEnv(lives=lambda t: 2 if t < 2 else 1)
    env = EpisodicLifeEnv(fake)
    env.reset()
    env.step(0)
    assert env.step(0)[2]  # life lost
    env.reset(seed=1)
    assert fake.num_resets == 2 and fake.t == 0


def test_episodic_life_on_breakout_keeps_the_game_after_a_lost_life() -> None:
    env = wrap_deepmind(gym.make(BREAKOUT), episode_life=True, clip_rewards=True)
    env.reset(seed=0)
    env.action_space.seed(0)
    for _ in range(500):
        _, _, terminated, truncated, info = env.step(env.action_space.sample())
        if terminated or truncated:
            break
    assert terminated and not info["terminated"] and info["lives"] == 4
    frame_before = info["episode_frame_number"]
    _, info = env.reset()
    assert info["lives"] == 4
    assert info["episode_frame_number"] > frame_before  # the same game, not a new one


def test_fire_reset_presses_fire_after_reset() -> None:
    fake = ScriptedAtariEnv()
    env = FireResetEnv(fake)
    obs, _ = env.reset()
    assert fake.actions == [1]
    np.testing.assert_array_equal(obs, fake.frame(1))
    with pytest.raises(ValueError, match="'FIRE'"):
        FireResetEnv(ScriptedAtariEnv(meanings=("NOOP", "RIGHT")))


def test_warp_frame_on_pong_is_84x84_grayscale_uint8() -> None:
    raw = gym.make(PONG)
    rgb, _ = raw.reset(seed=0)
    env = WarpFrame(raw)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (84, 84) and obs.dtype == np.uint8
    assert env.observation_space.shape == (84, 84)
    assert env.observation_space.dtype == np.uint8
    gray = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
    np.testing.assert_array_equal(obs, cv2.resize(gray, (84, 84), interpolation=cv2.INTER_AREA))


def test_warp_frame_resizes_grayscale_frames() -> None:
    obs, _ = WarpFrame(ScriptedAtariEnv()).reset()
    assert obs.shape == (84, 84) and obs.dtype == np.uint8


def test_scaled_float_frame_maps_uint8_to_unit_interval() -> None:
    env = ScaledFloatFrame(ScriptedAtariEnv())
    assert env.observation_space.dtype == np.float32
    env.reset()
    obs = env.step(0)[0]
    assert obs.dtype == np.float32
    np.testing.assert_allclose(obs, ScriptedAtariEnv.frame(1) / 255.0, rtol=1e-6)
    assert env.observation(np.array([0, 255], dtype=np.uint8)).tolist() == [0.0, 1.0]


def test_clip_reward_gives_the_sign() -> None:
    script = {1: -3.0, 2: 0.0, 3: 0.5, 4: 7.0}
    env = ClipRewardEnv(ScriptedAtariEnv(rewards=script.get))
    env.reset()
    rewards = [env.step(0)[1] for _ in range(4)]
    assert rewards == [-1.0, 0.0, 1.0, 1.0]
    assert all(type(r) is float for r in rewards)


def test_frame_stack_order_shape_and_dtype() -> None:
    fake = ScriptedAtariEnv()
    env = FrameStack(fake, n_frames=3)
    assert env.observation_space.shape == (3, 4, 4)
    assert env.observation_space.dtype == np.uint8
    obs, _ = env.reset()
    np.testing.assert_array_equal(obs, np.stack([fake.frame(0)] * 3))
    env.step(0)
    obs, *_ = env.step(0)
    assert obs.dtype == np.uint8
    np.testing.assert_array_equal(obs, np.stack([fake.frame(0), fake.frame(1), fake.frame(2)]))
    obs, *_ = env.step(0)
    np.testing.assert_array_equal(obs, np.stack([fake.frame(t) for t in (1, 2, 3)]))
    with pytest.raises(ValueError, match="n_frames"):
        FrameStack(fake, 0)


@pytest.mark.parametrize("task", [PONG, BREAKOUT])
def test_wrap_deepmind_on_real_games(task: str) -> None:
    env = wrap_deepmind(gym.make(task))
    assert env.observation_space.shape == (4, 84, 84)
    assert env.observation_space.dtype == np.uint8
    obs, _ = env.reset(seed=0)
    env.action_space.seed(0)
    rewards = []
    for _ in range(100):
        obs, reward, terminated, truncated, _ = env.step(env.action_space.sample())
        rewards.append(reward)
        assert obs.shape == (4, 84, 84) and obs.dtype == np.uint8
        if terminated or truncated:
            obs, _ = env.reset()
    assert env.observation_space.contains(obs)
    assert set(rewards) <= {-1.0, 0.0, 1.0}


def test_wrap_deepmind_scale_and_options() -> None:
    env = wrap_deepmind(gym.make(PONG), scale=True, frame_stack=0)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (84, 84) and obs.dtype == np.float32
    assert obs.min() >= 0.0 and obs.max() <= 1.0


def test_wrap_deepmind_rejects_envs_that_skip_frames() -> None:
    with pytest.raises(ValueError, match="frameskip=4"):
        wrap_deepmind(gym.make("ALE/Pong-v5"))
    env = wrap_deepmind(gym.make("ALE/Pong-v5", frameskip=1))
    assert env.reset(seed=0)[0].shape == (4, 84, 84)


def _wrapper_types(env: gym.Env) -> set[type]:
    types = set()
    while isinstance(env, gym.Wrapper):
        types.add(type(env))
        env = env.env
    return types


def test_make_atari_env_without_envpool(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(atari_wrapper, "envpool_is_available", False)
    env, training_envs, test_envs = make_atari_env(PONG, 0, 2, 1)
    try:
        assert isinstance(training_envs, SubprocVectorEnv)
        assert {EpisodicLifeEnv, ClipRewardEnv} <= _wrapper_types(env)
        for venv, num in ((training_envs, 2), (test_envs, 1)):
            obs, _ = venv.reset()
            assert obs.shape == (num, 4, 84, 84) and obs.dtype == np.uint8
            obs, *_ = venv.step(np.zeros(num, dtype=int))
            assert obs.shape == (num, 4, 84, 84) and obs.dtype == np.uint8
    finally:
        training_envs.close()
        test_envs.close()


def test_make_atari_env_with_envpool() -> None:
    assert atari_wrapper.envpool_is_available
    env, training_envs, test_envs = make_atari_env(PONG, 0, 2, 3)
    assert isinstance(training_envs, EnvPoolAtariVenv)
    assert env.observation_space.shape == (4, 84, 84)
    for venv, num, is_training in ((training_envs, 2, True), (test_envs, 3, False)):
        assert venv.config["episodic_life"] == is_training
        assert venv.config["reward_clip"] == is_training
        assert venv.config["task"] == "pong"
        obs, _ = venv.reset()
        assert obs.shape == (num, 4, 84, 84) and obs.dtype == np.uint8
        obs, *_ = venv.step(np.zeros(num, dtype=int))
        assert obs.shape == (num, 4, 84, 84) and obs.dtype == np.uint8


@pytest.mark.parametrize("use_envpool", [False, True])
def test_make_atari_env_scaled(monkeypatch: pytest.MonkeyPatch, use_envpool: bool) -> None:
    monkeypatch.setattr(atari_wrapper, "envpool_is_available", use_envpool)
    env, training_envs, test_envs = make_atari_env(PONG, 0, 1, 1, scale=1)
    try:
        assert env.observation_space.dtype == np.float32
        obs, _ = test_envs.reset()
        assert obs.shape == (1, 4, 84, 84) and obs.dtype == np.float32
        assert obs.min() >= 0.0 and obs.max() <= 1.0 and obs.max() > 0.0
    finally:
        training_envs.close()
        test_envs.close()


def test_atari_env_factory_gymnasium_training_and_test_envs_differ() -> None:
    factory = AtariEnvFactory(
        BREAKOUT, 4, use_envpool_if_available=False, venv_type=VectorEnvType.DUMMY
    )
    envs = factory.create_envs(2, 1, seed=0)
    assert isinstance(envs.training_envs, DummyVectorEnv)
    assert envs.get_observation_shape() == (4, 84, 84)
    assert envs.get_action_shape() == 4
    training_env = cast(DummyEnvWorker, envs.training_envs.workers[0]).env
    test_env = cast(DummyEnvWorker, envs.test_envs.workers[0]).env
    assert {EpisodicLifeEnv, ClipRewardEnv, FireResetEnv} <= _wrapper_types(training_env)
    assert not {EpisodicLifeEnv, ClipRewardEnv} & _wrapper_types(test_env)
    assert FireResetEnv in _wrapper_types(test_env)


def test_atari_env_factory_defaults_to_shared_memory_subprocesses() -> None:
    """Without EnvPool, the frame stacks of the default vector envs come through shared memory."""
    factory = AtariEnvFactory(BREAKOUT, 4, use_envpool_if_available=False)
    assert factory.venv_type is VectorEnvType.SUBPROC_SHARED_MEM_AUTO
    venv = factory.create_venv(1, EnvMode.TEST, seed=0)
    try:
        assert isinstance(venv, ShmemVectorEnv)
        obs, _ = venv.reset()
        assert obs.shape == (1, 4, 84, 84) and obs.dtype == np.uint8
    finally:
        venv.close()


def test_atari_env_factory_rejects_bad_frame_stack() -> None:
    with pytest.raises(ValueError, match="frame_stack"):
        AtariEnvFactory(PONG, 0)


def test_atari_env_factory_envpool_configuration() -> None:
    factory = AtariEnvFactory(PONG, 3)
    envpool_factory = factory.envpool_factory
    assert isinstance(envpool_factory, AtariEnvFactory.EnvPoolFactoryAtari)
    assert envpool_factory._transform_task(PONG) == "Pong-v5"
    kwargs = {"render_mode": None}
    training = envpool_factory._transform_kwargs(kwargs, EnvMode.TRAINING)
    test = envpool_factory._transform_kwargs(kwargs, EnvMode.TEST)
    assert "render_mode" not in training
    assert training["episodic_life"] and training["reward_clip"]
    assert not test["episodic_life"] and not test["reward_clip"]
    for options in (training, test):
        assert options["stack_num"] == 3
        assert (options["img_height"], options["img_width"]) == (84, 84)
        assert options["gray_scale"] and options["noop_max"] == 30
        assert options["frame_skip"] == 4
    envs = factory.create_envs(2, 1, seed=0)
    obs, _ = envs.training_envs.reset()
    assert obs.shape == (2, 3, 84, 84) and obs.dtype == np.uint8


def test_envpool_task_names() -> None:
    assert envpool_task("PongNoFrameskip-v4") == "Pong-v5"
    assert envpool_task("ALE/Breakout-v5") == "Breakout-v5"
    assert envpool_task("SpaceInvadersNoFrameskip-v4") == "SpaceInvaders-v5"


def test_unknown_envpool_task_falls_back_to_gymnasium(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(atari_wrapper, "envpool_knows", lambda task: False)
    assert AtariEnvFactory(PONG, 4).envpool_factory is None


def test_envpool_training_envs_continue_the_game_after_a_lost_life() -> None:
    envs = AtariEnvFactory(BREAKOUT, 4).create_envs(2, 1, seed=0)
    venv = envs.training_envs
    venv.reset()
    only_env_0 = np.array([0])
    rng = np.random.default_rng(0)
    for _ in range(500):
        _, _, terminated, _, info = venv.step(rng.integers(0, 4, size=1), only_env_0)
        if terminated[0]:
            break
    assert terminated[0] and info["lives"][0] == 4 and not info["terminated"][0]
    _, info = venv.reset(np.array([1, 0]))  # env 1 restarts, env 0 goes on
    assert info["env_id"].tolist() == [1, 0]
    assert info["lives"].tolist() == [5, 4]
    assert info["elapsed_step"][0] == 0 and info["elapsed_step"][1] > 0
    _, info = venv.reset()  # nothing left to continue: a plain EnvPool reset
    assert info["lives"].tolist() == [5, 5]


def test_random_policy_fills_buffer_with_uint8_frames(monkeypatch: pytest.MonkeyPatch) -> None:
    for use_envpool in (False, True):
        monkeypatch.setattr(atari_wrapper, "envpool_is_available", use_envpool)
        env, training_envs, test_envs = make_atari_env(PONG, 0, 2, 1)
        try:
            env.action_space.seed(0)
            policy = RandomActionPolicy(env.action_space, env.observation_space)
            buffer = VectorReplayBuffer(200, 2)
            Collector(policy, training_envs, buffer).collect(n_step=40, reset_before_collect=True)
            assert len(buffer) == 40
            assert buffer.obs.dtype == np.uint8 and buffer.obs.shape == (200, 4, 84, 84)
            assert buffer.obs_next.dtype == np.uint8
            assert buffer[0].obs.dtype == np.uint8
        finally:
            training_envs.close()
            test_envs.close()


def _context(spec: Any) -> Any:
    return SimpleNamespace(envs=SimpleNamespace(env=SimpleNamespace(spec=spec)))


def test_atari_epoch_stop_callback() -> None:
    pong = AtariEpochStopCallback(PONG)
    pong_context = _context(gym.spec(PONG))
    assert not pong.should_stop(19.9, pong_context)
    assert pong.should_stop(20.0, pong_context)
    breakout = AtariEpochStopCallback(BREAKOUT)
    assert gym.spec(BREAKOUT).reward_threshold is None
    assert not breakout.should_stop(1e9, _context(gym.spec(BREAKOUT)))
    with_threshold = _context(SimpleNamespace(reward_threshold=5.0))
    assert not breakout.should_stop(4.9, with_threshold)
    assert breakout.should_stop(5.0, with_threshold)
    assert not breakout.should_stop(1e9, _context(None))
