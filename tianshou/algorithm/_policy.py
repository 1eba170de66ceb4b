"""``Policy``, the part of an agent that acts, and ``RandomActionPolicy``.

Both are re-exported by :mod:`tianshou.algorithm.algorithm_base`, their public home.
"""

from abc import ABC, abstractmethod
from typing import Any, Literal, TypeAlias

import gymnasium as gym
import numpy as np
import torch
from gymnasium.spaces import Box, Discrete, MultiBinary, MultiDiscrete
from numpy.typing import ArrayLike
from torch import nn

from tianshou.data.batch import Batch
from tianshou.data.utils.converter import to_numpy
from tianshou.spaces.masks import action_mask, sample_legal_actions
from tianshou.utils.net.action_repr import RandomActor

ActionBoundMethod = Literal["clip", "tanh"]
ACTION_BOUND_METHODS: tuple[str, ...] = ("clip", "tanh")

PolicyState: TypeAlias = dict[str, Any] | Batch | np.ndarray | torch.Tensor | None
"""The hidden state a recurrent policy passes from one step to the next (None when stateless)."""


class Policy(nn.Module, ABC):
    """Maps a batch of observations to a batch of actions; the part of an agent that acts.

    A policy's network produces *raw* actions. For a ``Box`` action space the raw action is
    bounded and optionally rescaled to the environment's range by :meth:`map_action`; the raw
    action is what the replay buffer stores, so learning never sees the environment's scaling.

    :param action_space: the environment's action space (``Box``, ``Discrete``,
        ``MultiDiscrete`` or ``MultiBinary``).
    :param observation_space: the environment's observation space, kept for subclasses and
        introspection.
    :param action_scaling: rescale raw actions from [-1, 1] to ``[low, high]`` of the ``Box``
        space. Only valid for ``Box`` spaces.
    :param action_bound_method: how raw continuous actions are brought into [-1, 1] before scaling:
        ``"clip"``, ``"tanh"``, or ``None`` for no bounding.
    """

    def __init__(
        self,
        action_space: gym.Space,
        observation_space: gym.Space | None = None,
        action_scaling: bool = False,
        action_bound_method: ActionBoundMethod | None = "clip",
    ) -> None:
        if action_bound_method is not None and action_bound_method not in ACTION_BOUND_METHODS:
            raise ValueError(
                f"action_bound_method must be one of {ACTION_BOUND_METHODS} or None, "
                f"got {action_bound_method!r}"
            )
        if action_scaling and not isinstance(action_space, Box):
            raise ValueError(
                f"action_scaling=True needs a Box action space, got {type(action_space).__name__}"
            )
        super().__init__()
        self._action_type = self._action_type_of(action_space)
        self.action_space = action_space
        self.observation_space = observation_space
        self.action_scaling = action_scaling
        self.action_bound_method = action_bound_method
        self.agent_id: str | int = 0
        self.is_within_training_step = False
        """Whether the policy acts inside a training step (collecting training data or updating).

        Selects training-time behaviour such as exploration; set it with
        :func:`tianshou.utils.torch_utils.policy_within_training_step`.
        """

    def _action_type_of(self, action_space: gym.Space) -> str:
        """``"discrete"`` or ``"continuous"`` for a space this policy acts in; policies that
        handle more spaces (e.g. ``Tuple`` actions) override it.

        :raises ValueError: naming the policy and the space, for a space it cannot act in.
        """
        if isinstance(action_space, Discrete | MultiDiscrete | MultiBinary):
            return "discrete"
        if isinstance(action_space, Box):
            return "continuous"
        raise ValueError(
            f"{type(self).__name__}: unsupported action space {action_space!r}; "
            "docs/spaces.md lists which algorithm supports which space"
        )

    @property
    def action_type(self) -> Literal["discrete", "continuous"]:
        return self._action_type  # type: ignore[return-value]

    def set_agent_id(self, agent_id: str | int) -> None:
        """Set the id of the agent this policy acts for (multi-agent settings)."""
        self.agent_id = agent_id

    @abstractmethod
    def forward(self, batch: Batch, state: PolicyState = None, **kwargs: Any) -> Batch:
        """Compute actions for a batch of observations.

        :param batch: at least ``obs`` (leading dimension = batch size) and usually ``info``.
        :param state: the hidden state of a recurrent policy, or None.
        :return: a Batch with ``act`` and optionally ``state`` (next hidden state), ``policy``
            (data to store in the replay buffer), ``logits`` and ``dist``.
        """

    def add_exploration_noise(self, act: np.ndarray | Batch, batch: Batch) -> np.ndarray | Batch:
        """Return ``act`` with exploration noise added; the base policy explores not at all."""
        return act

    def map_action(self, act: np.ndarray | Batch | torch.Tensor) -> np.ndarray | Batch:
        """Turn raw actions into environment actions: bound them, then rescale them.

        Only ``Box`` spaces are mapped; other actions are returned as numpy arrays unchanged.
        """
        mapped = _to_numpy_action(act)
        if not isinstance(self.action_space, Box) or not isinstance(mapped, np.ndarray):
            return mapped
        if self.action_bound_method == "clip":
            mapped = np.clip(mapped, -1.0, 1.0)
        elif self.action_bound_method == "tanh":
            mapped = np.tanh(mapped)
        if self.action_scaling:
            bounded = self.action_bound_method in ("clip", "tanh")  # already within [-1, 1]
            if not bounded and mapped.size and (mapped.min() < -1.0 or mapped.max() > 1.0):
                raise ValueError(
                    "action scaling expects raw actions in [-1, 1]; use action_bound_method "
                    f"'clip' or 'tanh', got actions in [{mapped.min()}, {mapped.max()}]"
                )
            low, high = self.action_space.low, self.action_space.high
            mapped = low + (high - low) * (mapped + 1.0) / 2.0
        return mapped

    def map_action_inverse(self, act: np.ndarray | Batch | torch.Tensor) -> np.ndarray | Batch:
        """Invert :meth:`map_action`: environment actions back to raw actions.

        Collectors use it to store random warm-up actions in the policy's raw action space.
        """
        raw = _to_numpy_action(act)
        if not isinstance(self.action_space, Box) or not isinstance(raw, np.ndarray):
            return raw
        if self.action_scaling:
            low, high = self.action_space.low, self.action_space.high
            scale = np.maximum(high - low, np.finfo(np.float32).eps)
            raw = (raw - low) * 2.0 / scale - 1.0
        if self.action_bound_method == "tanh":
            raw = np.arctanh(np.clip(raw, -1.0 + 1e-7, 1.0 - 1e-7))
        return raw

    def compute_action(
        self,
        obs: ArrayLike | dict[str, Any],
        info: dict[str, Any] | None = None,
        state: PolicyState = None,
    ) -> np.ndarray | int:
        """The environment action for one unbatched observation (inference convenience).

        The observation (and its info) gets a batch dimension of one, the policy acts on it
        without exploration noise and without building an autograd graph, and the action is
        mapped as a collector maps it for the environment (:meth:`map_action`).

        :param obs: a single observation, as the environment returns it (an array, anything
            ``np.asarray`` accepts such as ``LazyFrames``, or a dict for ``Dict`` spaces).
        :param info: the environment's info dict for that observation, if the policy reads it.
        :param state: the recurrent hidden state, if any.
        :return: an ``int`` for a ``Discrete`` action space, otherwise an array of the action
            space's shape.
        """
        obs_batch = Batch(obs=_add_batch_dim(obs), info=_add_batch_dim(info or {}))
        with torch.no_grad():
            act = self.forward(obs_batch, state).act
        act = self.map_action(np.squeeze(_to_numpy_action(act), axis=0))
        if isinstance(self.action_space, Discrete):
            return int(act)
        return act  # type: ignore[return-value]


def _add_batch_dim(value: ArrayLike | dict[str, Any]) -> np.ndarray | Batch:
    """``value`` as a batch of one row: arrays get a leading axis, dicts become a Batch of such."""
    if isinstance(value, dict):
        return Batch({key: _add_batch_dim(item) for key, item in value.items()})
    return np.asarray(value)[None]


def _to_numpy_action(act: np.ndarray | Batch | torch.Tensor) -> np.ndarray | Batch:
    if isinstance(act, torch.Tensor):
        return act.detach().cpu().numpy()
    if isinstance(act, Batch):
        return act
    return to_numpy(act)


class RandomActionPolicy(Policy):
    """Acts uniformly at random in its action space; a baseline and a warm-up policy.

    Actions are drawn from the space's own random generator (seed it with
    ``action_space.seed(...)``) and are environment actions: no scaling or bounding is applied.
    For a ``Discrete`` or ``Box`` space the policy has an ``actor``, a
    :class:`~tianshou.utils.net.common.RandomActor`, like the trainable policies, so code that
    inspects ``policy.actor`` works on it too: for a ``Discrete`` space the actor outputs uniform
    action probabilities, for a ``Box`` space sampled actions. Other spaces (``MultiDiscrete``,
    ``MultiBinary``, ...) have no such network (``actor`` is None); their actions are sampled
    from the space directly.

    :param action_space: the space to sample from.
    :param observation_space: the environment's observation space (only kept).
    """

    def __init__(self, action_space: gym.Space, observation_space: gym.Space | None = None) -> None:
        super().__init__(
            action_space=action_space,
            observation_space=observation_space,
            action_scaling=False,
            action_bound_method=None,
        )
        self.actor: RandomActor | None = (
            RandomActor(action_space) if isinstance(action_space, Box | Discrete) else None
        )

    def forward(self, batch: Batch, state: PolicyState = None, **kwargs: Any) -> Batch:
        """One random action per observation in ``batch.obs``; uniform among the legal actions
        when the observations carry a legal-action mask (``Batch(obs=..., mask=...)``).

        :raises ValueError: if an observation's mask allows no action.
        """
        num = len(batch.obs)
        mask = action_mask(batch.obs)
        if mask is not None:
            spaces = [self.action_space] * num
            act = sample_legal_actions(spaces, to_numpy(mask), batch.get("info"))
        elif self.actor is None:
            act = np.stack([self.action_space.sample() for _ in range(num)])
        else:
            act = to_numpy(self.actor.compute_action_batch(batch.obs))
        return Batch(act=act.astype(self.action_space.dtype, copy=False), state=state)
