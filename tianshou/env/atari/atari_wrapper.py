"""DeepMind-style Atari preprocessing, and factories that build Atari envs for training.

The wrappers reproduce the preprocessing of Mnih et al. (2015), "Human-level control through
deep reinforcement learning" (Nature 518), as :func:`wrap_deepmind` chains them:

1. :class:`NoopResetEnv`: 1 to 30 random no-ops at the start of each episode;
2. :class:`MaxAndSkipEnv`: each action is repeated for 4 frames, the observation is the
   pixel-wise maximum of the last two (Atari sprites flicker), the rewards are summed;
3. :class:`EpisodicLifeEnv` (training only): losing a life ends the training episode, while
   the game itself goes on until it is really over;
4. :class:`FireResetEnv`: presses FIRE after a reset in games that wait for it;
5. :class:`WarpFrame`: 84x84 grayscale;
6. :class:`ScaledFloatFrame` (optional): floats in [0, 1];
7. :class:`ClipRewardEnv` (training only): the reward's sign;
8. :class:`FrameStack`: the last 4 frames stacked along axis 0, shape ``(4, 84, 84)``.

Observations stay ``uint8`` unless scaling is asked for, so that a replay buffer of a million
frames needs bytes, not float32 words, per pixel; networks divide by 255 themselves.

:func:`make_atari_env` and :class:`AtariEnvFactory` build the training and test envs either
with EnvPool (when installed and it knows the game: ``"PongNoFrameskip-v4"`` becomes EnvPool's
``"Pong-v5"``) or with gymnasium and ale-py. Both give ``(frame_stack, 84, 84)`` ``uint8``
observations (``float32`` when scaling), the same action set, frame skip, no-op starts, FIRE
resets, 27,000-step (108,000-frame) time limit, and episodic life and reward clipping on the
training envs only. Where the two differ:

- their random streams differ, so equal seeds give different games, and EnvPool converts to
  grayscale and resizes in its own code, so pixel values may differ slightly;
- the gymnasium training envs report whether the game is really over in ``info["terminated"]``
  and the remaining lives in ``info["lives"]``, as EnvPool does, but EnvPool's ``info`` holds
  more keys (``env_id``, ``reward``, ``elapsed_step``, ``players``);
- after a lost life, the gymnasium stack starts again from copies of the first frame, while
  EnvPool's keeps the frames from before the loss;
- EnvPool's own ``reset`` restarts the game even after a mere lost life, and it has no
  scaling: the EnvPool envs returned here continue the game and divide by 255 themselves
  (:class:`~tianshou.env.atari._envpool_venv.EnvPoolAtariVenv`).
"""

import importlib.util
import logging
from collections import deque
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np

from tianshou.env.atari._envpool_venv import EnvPoolAtariVenv, envpool_knows, envpool_task
from tianshou.env.venvs import BaseVectorEnv
from tianshou.highlevel.env import EnvFactoryRegistered, EnvMode, EnvPoolFactory, VectorEnvType
from tianshou.highlevel.trainer import EpochStopCallback, TrainingContext
from tianshou.utils.optional_dependency import install_hint

try:
    import cv2
except ImportError as exc:
    raise ImportError(f"tianshou.env.atari needs OpenCV; {install_hint('atari')}") from exc

try:
    import ale_py

    gym.register_envs(ale_py)
except ImportError:  # without ale-py, gym.make of an Atari task fails naming the ALE namespace
    pass

log = logging.getLogger(__name__)

envpool_is_available: bool = importlib.util.find_spec("envpool") is not None
"""Whether EnvPool is installed (it is imported only when an EnvPool env is built)."""

FRAME_SIZE = 84
"""Height and width of a warped frame."""
NOOP_MAX = 30
FRAME_SKIP = 4
MAX_EPISODE_STEPS = 27_000
"""Agent steps per episode (108,000 frames), the time limit of ALE's v4/v5 tasks."""
PONG_STOP_REWARD = 20.0
_NOOP = 0
_FIRE = 1

StepResult = tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]


def get_space_dtype(obs_space: gym.spaces.Box) -> type[np.floating] | type[np.integer]:
    """The kind of number an observation space holds: ``np.integer`` or ``np.floating``.

    :param obs_space: a ``Box`` space.
    :raises TypeError: for any other dtype (e.g. bool).
    """
    if np.issubdtype(obs_space.dtype, np.integer):
        return np.integer
    if np.issubdtype(obs_space.dtype, np.floating):
        return np.floating
    raise TypeError(
        f"observation space dtype {obs_space.dtype} is neither integer nor floating: {obs_space}"
    )


def _check_action_meaning(env: gym.Env, action: int, meaning: str) -> None:
    get_meanings = getattr(env.unwrapped, "get_action_meanings", None)
    if get_meanings is None:
        raise TypeError(
            f"{type(env.unwrapped).__name__} has no get_action_meanings(); "
            "the Atari wrappers need an ALE env"
        )
    meanings = get_meanings()
    if len(meanings) <= action or meanings[action] != meaning:
        raise ValueError(f"action {action} must be {meaning!r}, the env's actions are {meanings}")


class NoopResetEnv(gym.Wrapper):
    """Starts each episode with a random number (1 to ``noop_max``) of no-op actions.

    The random start varies the initial state even in deterministic games, so that an agent
    cannot succeed by memorising one action sequence. The count is drawn from the env's seeded
    generator (``env.unwrapped.np_random``), so it is reproducible with ``reset(seed=...)``.

    :param env: an Atari env whose action 0 is NOOP.
    :param noop_max: the largest number of no-ops, at least 1.
    """

    def __init__(self, env: gym.Env, noop_max: int = NOOP_MAX) -> None:
        super().__init__(env)
        if noop_max < 1:
            raise ValueError(f"noop_max must be at least 1, got {noop_max}")
        _check_action_meaning(env, _NOOP, "NOOP")
        self.noop_max = noop_max
        self.noop_action = _NOOP

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        obs, info = self.env.reset(**kwargs)
        noops = int(self.unwrapped.np_random.integers(1, self.noop_max + 1))
        for _ in range(noops):
            obs, _, terminated, truncated, info = self.env.step(self.noop_action)
            if terminated or truncated:
                obs, info = self.env.reset()
        return obs, info


class MaxAndSkipEnv(gym.Wrapper):
    """Repeats each action for ``skip`` frames, returning the maximum of the last two frames.

    Some Atari sprites are drawn only on every other frame; the pixel-wise maximum shows them.
    The rewards of the skipped frames are summed. The repetition stops early when the episode
    ends, and the frame then ending it is returned (maximised with the one before, if any).

    :param env: an env that does not skip frames itself (e.g. ``"PongNoFrameskip-v4"``).
    :param skip: frames per action, at least 1.
    """

    def __init__(self, env: gym.Env, skip: int = FRAME_SKIP) -> None:
        super().__init__(env)
        if skip < 1:
            raise ValueError(f"skip must be at least 1, got {skip}")
        self._skip = skip

    def step(self, action: Any) -> StepResult:
        total_reward = 0.0
        last_two: deque[np.ndarray] = deque(maxlen=2)
        for _ in range(self._skip):
            obs, reward, terminated, truncated, info = self.env.step(action)
            last_two.append(obs)
            total_reward += float(reward)
            if terminated or truncated:
                break
        max_frame = last_two[0] if len(last_two) == 1 else np.maximum(last_two[0], last_two[1])
        return max_frame, total_reward, terminated, truncated, info


def _lives(info: dict[str, Any]) -> int:
    if "lives" not in info:
        raise KeyError(f"EpisodicLifeEnv needs info['lives'] as ALE envs report it, got {info}")
    return int(info["lives"])


class EpisodicLifeEnv(gym.Wrapper):
    """Ends the episode when a life is lost, but resets the game only when it is really over.

    Ending the episode at each lost life tells a value-based learner that losing a life is
    final, which speeds up learning; the game itself continues, so later levels are still
    seen. ``reset`` after a lost life takes one no-op step instead of restarting the game
    (unless a ``seed`` is given, which always restarts it). Every ``info`` carries
    ``"terminated"``: whether the game is really over (as EnvPool reports it), so that a
    lost life (``terminated`` True, ``info["terminated"]`` False) can be told apart. Use it for
    training only: test returns should count whole games.

    :param env: an ALE env reporting the remaining lives in ``info["lives"]``.
    """

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.lives = 0
        self.was_real_done = True

    def step(self, action: Any) -> StepResult:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.was_real_done = terminated or truncated
        info["terminated"] = terminated
        lives = _lives(info)
        if 0 < lives < self.lives:
            terminated = True
        self.lives = lives
        return obs, reward, terminated, truncated, info

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        if self.was_real_done or kwargs.get("seed") is not None:
            obs, info = self.env.reset(**kwargs)
        else:
            obs, _, terminated, truncated, info = self.env.step(_NOOP)
            if terminated or truncated:  # the game ended during that one step
                obs, info = self.env.reset(**kwargs)
        self.was_real_done = False
        info["terminated"] = False
        self.lives = _lives(info)
        return obs, info


class FireResetEnv(gym.Wrapper):
    """Presses FIRE after each reset, for games that stand still until it is pressed.

    :param env: an Atari env whose action 1 is FIRE.
    """

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        _check_action_meaning(env, _FIRE, "FIRE")

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        self.env.reset(**kwargs)
        obs, _, terminated, truncated, info = self.env.step(_FIRE)
        if terminated or truncated:
            obs, info = self.env.reset(**kwargs)
        return obs, info


class WarpFrame(gym.ObservationWrapper):
    """Turns each RGB frame into an 84x84 grayscale image (OpenCV, area interpolation).

    The dtype is kept (``uint8`` for ALE). A frame that is already grayscale (2-d) is only
    resized.

    :param env: an env with image observations of shape ``(H, W, 3)`` or ``(H, W)``.
    """

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.size = FRAME_SIZE
        space = env.observation_space
        if not isinstance(space, gym.spaces.Box) or len(space.shape) not in (2, 3):
            raise TypeError(f"WarpFrame needs an (H, W, 3) or (H, W) image Box space, got {space}")
        self.observation_space = gym.spaces.Box(
            low=np.min(space.low),
            high=np.max(space.high),
            shape=(self.size, self.size),
            dtype=space.dtype,
        )

    def observation(self, frame: np.ndarray) -> np.ndarray:
        if frame.ndim == 3:
            frame = cv2.cvtColor(frame, cv2.COLOR_RGB2GRAY)
        return cv2.resize(frame, (self.size, self.size), interpolation=cv2.INTER_AREA)


class ScaledFloatFrame(gym.ObservationWrapper):
    """Maps observations linearly from the space's ``[low, high]`` onto ``float32`` ``[0, 1]``.

    Costs four times the memory of ``uint8`` frames in a replay buffer; prefer scaling inside
    the network.

    :param env: an env with an integer or floating ``Box`` observation space.
    """

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        space = env.observation_space
        if not isinstance(space, gym.spaces.Box):
            raise TypeError(f"ScaledFloatFrame needs a Box observation space, got {space}")
        get_space_dtype(space)  # rejects non-numeric spaces
        self.bias = float(np.min(space.low))
        self.scale = float(np.max(space.high)) - self.bias
        self.observation_space = gym.spaces.Box(0.0, 1.0, shape=space.shape, dtype=np.float32)

    def observation(self, observation: np.ndarray) -> np.ndarray:
        return (np.asarray(observation, dtype=np.float32) - self.bias) / self.scale


class ClipRewardEnv(gym.RewardWrapper):
    """Replaces each reward by its sign (-1, 0 or +1), so that one learning rate suits all games.

    :param env: any env with scalar rewards.
    """

    def reward(self, reward: SupportsFloat) -> float:
        return float(np.sign(float(reward)))


class FrameStack(gym.Wrapper):
    """Stacks the last ``n_frames`` observations along a new first axis.

    With warped frames the observation is ``(n_frames, 84, 84)``, oldest first, in the wrapped
    env's dtype. After a reset the first frame fills the whole stack. The frames are held by
    reference, so the only per-step allocation is the stacked array itself.

    :param env: an env with array observations.
    :param n_frames: how many frames to stack, at least 1.
    """

    def __init__(self, env: gym.Env, n_frames: int) -> None:
        super().__init__(env)
        if n_frames < 1:
            raise ValueError(f"n_frames must be at least 1, got {n_frames}")
        space = env.observation_space
        if not isinstance(space, gym.spaces.Box):
            raise TypeError(f"FrameStack needs a Box observation space, got {space}")
        self.n_frames = n_frames
        self.frames: deque[np.ndarray] = deque(maxlen=n_frames)
        self.observation_space = gym.spaces.Box(
            low=np.repeat(space.low[None], n_frames, axis=0),
            high=np.repeat(space.high[None], n_frames, axis=0),
            dtype=space.dtype,
        )

    def reset(self, **kwargs: Any) -> tuple[np.ndarray, dict[str, Any]]:
        obs, info = self.env.reset(**kwargs)
        self.frames.extend([obs] * self.n_frames)
        return self._get_ob(), info

    def step(self, action: Any) -> StepResult:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.frames.append(obs)
        return self._get_ob(), reward, terminated, truncated, info

    def _get_ob(self) -> np.ndarray:
        return np.stack(self.frames, axis=0)


def _check_no_frameskip(env: gym.Env) -> None:
    frameskip = env.spec.kwargs.get("frameskip", 1) if env.spec is not None else 1
    if frameskip != 1:
        raise ValueError(
            f"{env.spec.id if env.spec else env} already skips frames (frameskip={frameskip}), "
            "and wrap_deepmind skips 4 more; use e.g. gym.make('PongNoFrameskip-v4') or "
            "gym.make('ALE/Pong-v5', frameskip=1)"
        )


def wrap_deepmind(
    env: gym.Env,
    episode_life: bool = True,
    clip_rewards: bool = True,
    frame_stack: int = 4,
    scale: bool = False,
    warp_frame: bool = True,
) -> gym.Env:
    """Applies the DeepMind preprocessing (see the module docstring) to an ALE env.

    >>> env = wrap_deepmind(gym.make("PongNoFrameskip-v4"), episode_life=False)
    >>> obs, info = env.reset(seed=0)
    >>> obs.shape, obs.dtype
    ((4, 84, 84), dtype('uint8'))

    :param env: an ALE env that does not skip frames itself, e.g.
        ``gym.make("PongNoFrameskip-v4")``.
    :param episode_life: end the episode at each lost life (:class:`EpisodicLifeEnv`); for
        training envs only.
    :param clip_rewards: replace rewards by their sign (:class:`ClipRewardEnv`); for training
        envs only.
    :param frame_stack: number of frames to stack; 0 returns single frames.
    :param scale: return ``float32`` in [0, 1] instead of ``uint8`` (:class:`ScaledFloatFrame`).
    :param warp_frame: convert to 84x84 grayscale (:class:`WarpFrame`).
    """
    _check_no_frameskip(env)
    env = NoopResetEnv(env, noop_max=NOOP_MAX)
    env = MaxAndSkipEnv(env, skip=FRAME_SKIP)
    if episode_life:
        env = EpisodicLifeEnv(env)
    if "FIRE" in env.unwrapped.get_action_meanings():  # type: ignore[attr-defined]
        env = FireResetEnv(env)
    if warp_frame:
        env = WarpFrame(env)
    if scale:
        env = ScaledFloatFrame(env)
    if clip_rewards:
        env = ClipRewardEnv(env)
    if frame_stack:
        env = FrameStack(env, frame_stack)
    return env


def make_atari_env(
    task: str,
    seed: int,
    num_training_envs: int,
    num_test_envs: int,
    scale: int | bool = 0,
    frame_stack: int = 4,
) -> tuple[gym.Env, BaseVectorEnv, BaseVectorEnv]:
    """Builds one Atari env and the training and test vector envs, with EnvPool if available.

    Training envs end episodes at lost lives and clip rewards; test envs do neither, so test
    returns are whole-game scores. See :class:`AtariEnvFactory`.

    :param task: a gymnasium ALE task without frame skip, e.g. ``"PongNoFrameskip-v4"``.
    :param seed: seed of the first training env; the others and the test envs are derived from
        it (see ``EnvFactory.create_envs``).
    :param num_training_envs: number of training envs.
    :param num_test_envs: number of test envs.
    :param scale: whether observations are ``float32`` in [0, 1] instead of ``uint8``.
    :param frame_stack: number of stacked frames.
    :return: ``(env, training_envs, test_envs)``; ``env`` is a single training-mode env, e.g.
        for reading the observation and action spaces.
    """
    factory = AtariEnvFactory(task, frame_stack, scale=scale)
    envs = factory.create_envs(num_training_envs, num_test_envs, seed=seed)
    return envs.env, envs.training_envs, envs.test_envs


class AtariEnvFactory(EnvFactoryRegistered):
    """Builds DeepMind-preprocessed Atari envs, with EnvPool for the vector envs if possible.

    Single envs (and vector envs without EnvPool) are ``wrap_deepmind(gym.make(task))``; with
    EnvPool the vector envs are EnvPool's own Atari envs, configured to match (see the module
    docstring for the differences). Training envs end episodes at lost lives and clip rewards;
    test and watch envs do neither.

    :param task: a gymnasium ALE task without frame skip, e.g. ``"PongNoFrameskip-v4"``.
    :param frame_stack: number of stacked frames, at least 1.
    :param scale: whether observations are ``float32`` in [0, 1] instead of ``uint8``.
    :param use_envpool_if_available: use EnvPool for vector envs when it is installed and knows
        the game.
    :param venv_type: how vector envs are built without EnvPool. The default runs each env in
        its own process and passes the frame stacks through shared memory, which spares copying
        them through pipes (spawned processes on macOS, where forking is unsafe).
    """

    def __init__(
        self,
        task: str,
        frame_stack: int,
        scale: int | bool = 0,
        use_envpool_if_available: bool = True,
        venv_type: VectorEnvType = VectorEnvType.SUBPROC_SHARED_MEM_AUTO,
    ) -> None:
        if frame_stack < 1:
            raise ValueError(f"frame_stack must be at least 1, got {frame_stack}")
        self.frame_stack = frame_stack
        self.scale = bool(scale)
        envpool_factory = None
        if use_envpool_if_available and envpool_is_available:
            if envpool_knows(envpool_task(task)):
                envpool_factory = self.EnvPoolFactoryAtari(self)
            else:
                log.info(f"EnvPool has no {envpool_task(task)!r}; using gymnasium for {task!r}")
        super().__init__(task=task, venv_type=venv_type, envpool_factory=envpool_factory)

    def create_env(self, mode: EnvMode, seed: int | None = None) -> gym.Env:
        is_training = mode == EnvMode.TRAINING
        return wrap_deepmind(
            super().create_env(mode, seed),
            episode_life=is_training,
            clip_rewards=is_training,
            frame_stack=self.frame_stack,
            scale=self.scale,
        )

    class EnvPoolFactoryAtari(EnvPoolFactory):
        """Configures EnvPool's Atari envs like :func:`wrap_deepmind` configures gymnasium's.

        :param parent: the factory whose ``frame_stack`` and ``scale`` are used.
        """

        def __init__(self, parent: "AtariEnvFactory") -> None:
            super().__init__()
            self.parent = parent

        def _transform_task(self, task: str) -> str:
            return envpool_task(super()._transform_task(task))

        def _transform_kwargs(self, kwargs: dict, mode: EnvMode) -> dict:
            kwargs = super()._transform_kwargs(kwargs, mode)
            is_training = mode == EnvMode.TRAINING
            kwargs.update(
                episodic_life=is_training,
                reward_clip=is_training,
                stack_num=self.parent.frame_stack,
                img_height=FRAME_SIZE,
                img_width=FRAME_SIZE,
                gray_scale=True,
                noop_max=NOOP_MAX,
                frame_skip=FRAME_SKIP,
                use_fire_reset=True,
                repeat_action_probability=0.0,
                max_episode_steps=MAX_EPISODE_STEPS,
            )
            return kwargs

        def create_venv(
            self, task: str, num_envs: int, mode: EnvMode, seed: int | None, kwargs: dict
        ) -> BaseVectorEnv:
            venv = super().create_venv(task, num_envs, mode, seed, kwargs)
            return EnvPoolAtariVenv(  # type: ignore[return-value]  # used like a vector env
                venv, continue_after_life_loss=mode == EnvMode.TRAINING, scale=self.parent.scale
            )


class AtariEpochStopCallback(EpochStopCallback):
    """Stops training once the mean test return reaches the game's reward threshold.

    Pong stops at 20 (of at most 21); other games at their gymnasium spec's
    ``reward_threshold``, and never when the spec has none.

    :param task: the task name, e.g. ``"PongNoFrameskip-v4"``.
    """

    def __init__(self, task: str) -> None:
        self.task = task

    def should_stop(self, mean_rewards: float, context: TrainingContext) -> bool:
        if "Pong" in self.task:
            return mean_rewards >= PONG_STOP_REWARD
        spec = context.envs.env.spec
        threshold = spec.reward_threshold if spec is not None else None
        return threshold is not None and mean_rewards >= threshold
