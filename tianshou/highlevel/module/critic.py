"""Critic factories: build value networks (and ensembles of them) for given envs.

A critic estimates ``V(s)`` (``use_action=False``), or ``Q(s, a)`` (``use_action=True``) for
continuous envs; for discrete envs ``Q(s, .)`` is one output per action
(``discrete_last_size_use_action_shape=True``). Dict observations are read through a
:class:`~tianshou.utils.net.dict_encoder.DictEncoder` (``Q(s, a)`` and ``Q(s, a)`` ensembles: a
:class:`~tianshou.utils.net.dict_encoder.DictActionCritic`).
"""

from abc import ABC, abstractmethod
from collections.abc import Sequence
from functools import partial

import gymnasium as gym
import numpy as np
from torch import nn

from tianshou.highlevel.env import Environments, EnvType
from tianshou.highlevel.module.actor import ActorFuture
from tianshou.highlevel.module.core import TDevice, init_linear_orthogonal
from tianshou.highlevel.module.observation_body import (
    create_observation_body,
    network_observation_space,
    reads_dict_observations,
)
from tianshou.utils.net.common import EnsembleLinear, ModuleType, ModuleWithVectorOutput, Net
from tianshou.utils.net.continuous import ContinuousCritic
from tianshou.utils.net.dict_encoder import DictActionCritic
from tianshou.utils.net.discrete import DiscreteCritic
from tianshou.utils.string import ToStringMixin


def _discrete_last_size(envs: Environments, use_action_shape: bool) -> int:
    return int(np.prod(envs.get_action_shape())) if use_action_shape else 1


def _reject_discrete_action_input(factory: object, envs: Environments, use_action: bool) -> None:
    if use_action and envs.get_type().is_discrete():
        raise ValueError(
            f"{factory}: a critic for discrete envs takes observations only (use_action=False); "
            f"for one Q-value per action pass discrete_last_size_use_action_shape=True"
        )


def _dict_observation_critic(
    envs: Environments, hidden_sizes: Sequence[int], activation: ModuleType, use_action: bool
) -> nn.Module:
    """A critic of a continuous env with dict observations: ``Q(s, a)`` on the encoded entries
    and the action, or a value head on a :class:`DictEncoder` body for ``V(s)``."""
    if use_action:
        space = network_observation_space(envs)
        assert isinstance(space, gym.spaces.Dict)
        return DictActionCritic(
            observation_space=space,
            action_shape=envs.get_action_shape(),
            hidden_sizes=hidden_sizes,
            activation=activation,
        )
    body = create_observation_body(envs, hidden_sizes, activation)
    return DiscreteCritic(preprocess_net=body, last_size=1)


class CriticFactory(ToStringMixin, ABC):
    """Builds a critic for given environments."""

    @abstractmethod
    def create_module(
        self,
        envs: Environments,
        device: TDevice,
        use_action: bool,
        discrete_last_size_use_action_shape: bool = False,
    ) -> nn.Module:
        """Build the critic on ``device``.

        :param envs: the environments.
        :param device: where the critic's parameters live.
        :param use_action: the critic takes actions besides observations (``Q(s, a)``;
            continuous envs only).
        :param discrete_last_size_use_action_shape: for discrete envs, output one value per
            action instead of a single value.
        """


class CriticFactoryContinuousNet(CriticFactory):
    """An MLP :class:`ContinuousCritic` with orthogonally initialised linear layers.

    :param hidden_sizes: widths of the hidden layers.
    :param activation: activation after each hidden layer.
    """

    def __init__(self, hidden_sizes: Sequence[int], activation: ModuleType = nn.ReLU) -> None:
        self.hidden_sizes = hidden_sizes
        self.activation = activation

    def create_module(
        self,
        envs: Environments,
        device: TDevice,
        use_action: bool,
        discrete_last_size_use_action_shape: bool = False,
    ) -> nn.Module:
        envs.get_type().assert_continuous(self)
        critic: nn.Module
        if reads_dict_observations(envs):
            critic = _dict_observation_critic(envs, self.hidden_sizes, self.activation, use_action)
        else:
            body = Net(
                state_shape=envs.get_observation_shape(),
                action_shape=envs.get_action_shape() if use_action else 0,
                hidden_sizes=self.hidden_sizes,
                concat=use_action,
                activation=self.activation,
            )
            critic = ContinuousCritic(preprocess_net=body)
        init_linear_orthogonal(critic)
        return critic.to(device)


class CriticFactoryDiscreteNet(CriticFactory):
    """An MLP :class:`DiscreteCritic` with orthogonally initialised linear layers.

    :param hidden_sizes: widths of the hidden layers.
    :param activation: activation after each hidden layer.
    """

    def __init__(self, hidden_sizes: Sequence[int], activation: ModuleType = nn.ReLU) -> None:
        self.hidden_sizes = hidden_sizes
        self.activation = activation

    def create_module(
        self,
        envs: Environments,
        device: TDevice,
        use_action: bool,
        discrete_last_size_use_action_shape: bool = False,
    ) -> DiscreteCritic:
        envs.get_type().assert_discrete(self)
        _reject_discrete_action_input(self, envs, use_action)
        body = create_observation_body(envs, self.hidden_sizes, self.activation)
        critic = DiscreteCritic(
            preprocess_net=body,
            last_size=_discrete_last_size(envs, discrete_last_size_use_action_shape),
        )
        init_linear_orthogonal(critic)
        return critic.to(device)


class CriticFactoryDefault(CriticFactory):
    """Builds the MLP critic that suits the env type (:class:`CriticFactoryContinuousNet` or
    :class:`CriticFactoryDiscreteNet`).

    :param hidden_sizes: widths of the hidden layers.
    :param hidden_activation: activation after each hidden layer.
    """

    DEFAULT_HIDDEN_SIZES = (64, 64)

    def __init__(
        self,
        hidden_sizes: Sequence[int] = DEFAULT_HIDDEN_SIZES,
        hidden_activation: ModuleType = nn.ReLU,
    ) -> None:
        self.hidden_sizes = hidden_sizes
        self.hidden_activation = hidden_activation

    def create_module(
        self,
        envs: Environments,
        device: TDevice,
        use_action: bool,
        discrete_last_size_use_action_shape: bool = False,
    ) -> nn.Module:
        factory: CriticFactory
        if envs.get_type() == EnvType.DISCRETE:
            factory = CriticFactoryDiscreteNet(self.hidden_sizes, self.hidden_activation)
        else:
            factory = CriticFactoryContinuousNet(self.hidden_sizes, self.hidden_activation)
        return factory.create_module(envs, device, use_action, discrete_last_size_use_action_shape)


class CriticFactoryReuseActor(CriticFactory):
    """A critic head on the body of the actor built earlier (shared layers), for actor-critic
    methods; mainly for the experiment builders.

    :param actor_future: will hold the actor by the time the critic is built.
    """

    def __init__(self, actor_future: ActorFuture) -> None:
        self.actor_future = actor_future

    def _tostring_excludes(self) -> list[str]:
        return ["actor_future"]

    def create_module(
        self,
        envs: Environments,
        device: TDevice,
        use_action: bool,
        discrete_last_size_use_action_shape: bool = False,
    ) -> nn.Module:
        body = self._actor_body()
        if envs.get_type().is_discrete():
            _reject_discrete_action_input(self, envs, use_action)
            last_size = _discrete_last_size(envs, discrete_last_size_use_action_shape)
            return DiscreteCritic(preprocess_net=body, last_size=last_size).to(device)
        if use_action:
            raise ValueError(
                f"{self}: a critic sharing the actor's body estimates V(s) only; use "
                f"use_action=False, or a separate critic (e.g. CriticFactoryDefault) for Q(s, a)"
            )
        if reads_dict_observations(envs):
            # ContinuousCritic turns observations into one tensor first; a value head on the
            # (dict-reading) body is all V(s) needs
            return DiscreteCritic(preprocess_net=body, last_size=1).to(device)
        return ContinuousCritic(preprocess_net=body, apply_preprocess_net_to_obs_only=True).to(
            device
        )

    def _actor_body(self) -> ModuleWithVectorOutput:
        actor = self.actor_future.actor
        get_body = getattr(actor, "get_preprocess_net", None)
        if get_body is None:
            raise ValueError(
                f"CriticFactoryReuseActor needs an actor with a preprocess net (e.g. built by "
                f"ActorFactoryDefault), got {type(actor).__name__}; was the actor built first?"
            )
        return get_body()


class CriticEnsembleFactory(ABC):
    """Builds an ensemble of critics computed as one network (e.g. for REDQ)."""

    @abstractmethod
    def create_module(
        self,
        envs: Environments,
        device: TDevice,
        ensemble_size: int,
        use_action: bool,
    ) -> nn.Module:
        """Build the ensemble on ``device``; it maps a batch to ``(ensemble_size, batch, 1)``.

        :param envs: the environments.
        :param device: where the parameters live.
        :param ensemble_size: number of members.
        :param use_action: the members take actions besides observations (``Q(s, a)``).
        """


class CriticEnsembleFactoryContinuousNet(CriticEnsembleFactory, ToStringMixin):
    """An ensemble of MLP critics for continuous envs, whose layers are
    :class:`~tianshou.utils.net.common.EnsembleLinear` (all members in one matmul). For dict
    observations the members are the MLPs of a
    :class:`~tianshou.utils.net.dict_encoder.DictActionCritic` on one shared encoding
    (``Q(s, a)`` ensembles only).

    :param hidden_sizes: widths of the hidden layers of each member.
    :param activation: activation after each hidden layer.
    """

    def __init__(self, hidden_sizes: Sequence[int], activation: ModuleType = nn.ReLU) -> None:
        self.hidden_sizes = hidden_sizes
        self.activation = activation

    def create_module(
        self,
        envs: Environments,
        device: TDevice,
        ensemble_size: int,
        use_action: bool,
    ) -> nn.Module:
        envs.get_type().assert_continuous(self)
        if ensemble_size < 1:
            raise ValueError(f"ensemble_size must be at least 1, got {ensemble_size}")
        linear_layer = partial(EnsembleLinear, ensemble_size)
        if reads_dict_observations(envs):
            space = network_observation_space(envs)
            if not use_action:
                raise ValueError(
                    f"{self}: ensembles of V(s) critics read flat observations, but the env "
                    f"observes {space}; flatten it (gymnasium.wrappers.FlattenObservation) or "
                    "pass your own CriticEnsembleFactory"
                )
            assert isinstance(space, gym.spaces.Dict)
            dict_critic = DictActionCritic(
                observation_space=space,
                action_shape=envs.get_action_shape(),
                hidden_sizes=self.hidden_sizes,
                activation=self.activation,
                linear_layer=linear_layer,
            )
            return dict_critic.to(device)
        body = Net(
            state_shape=envs.get_observation_shape(),
            action_shape=envs.get_action_shape() if use_action else 0,
            hidden_sizes=self.hidden_sizes,
            concat=use_action,
            activation=self.activation,
            linear_layer=linear_layer,
        )
        critic = ContinuousCritic(
            preprocess_net=body, linear_layer=linear_layer, flatten_input=False
        )
        return critic.to(device)


class CriticEnsembleFactoryDefault(CriticEnsembleFactory, ToStringMixin):
    """Builds a :class:`CriticEnsembleFactoryContinuousNet` ensemble (continuous envs only).

    :param hidden_sizes: widths of the hidden layers of each member.
    """

    DEFAULT_HIDDEN_SIZES = (64, 64)

    def __init__(self, hidden_sizes: Sequence[int] = DEFAULT_HIDDEN_SIZES) -> None:
        self.hidden_sizes = hidden_sizes

    def create_module(
        self,
        envs: Environments,
        device: TDevice,
        ensemble_size: int,
        use_action: bool,
    ) -> nn.Module:
        if envs.get_type().is_discrete():
            raise ValueError(
                "CriticEnsembleFactoryDefault builds ensembles for continuous envs only "
                "(EnvType.CONTINUOUS); pass your own CriticEnsembleFactory for discrete envs"
            )
        return CriticEnsembleFactoryContinuousNet(self.hidden_sizes).create_module(
            envs, device, ensemble_size, use_action
        )
