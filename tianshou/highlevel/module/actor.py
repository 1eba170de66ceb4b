"""Actor factories: build the actor network (and its distribution function) for given envs.

:class:`ActorFactoryDefault` picks the library's MLP actor that suits the env type: a Gaussian
or deterministic actor (:mod:`tianshou.utils.net.continuous`) for continuous envs, a categorical
one (:mod:`tianshou.utils.net.discrete`) for discrete envs. Every factory's body reads dict
observations through a :class:`~tianshou.utils.net.dict_encoder.DictEncoder` (see
:mod:`tianshou.highlevel.module.observation_body`).
"""

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, Protocol

import torch
from torch import nn
from torch.distributions import Distribution

from tianshou.highlevel.env import Environments, EnvType
from tianshou.highlevel.module.core import ModuleFactory, TDevice, init_linear_orthogonal
from tianshou.highlevel.module.intermediate import IntermediateModule, IntermediateModuleFactory
from tianshou.highlevel.module.observation_body import create_observation_body
from tianshou.highlevel.params.dist_fn import (
    DistributionFunctionFactoryCategorical,
    DistributionFunctionFactoryIndependentGaussians,
)
from tianshou.utils.net.common import ModuleType, ModuleWithVectorOutput
from tianshou.utils.net.continuous import ContinuousActorDeterministic, ContinuousActorProbabilistic
from tianshou.utils.net.discrete import DiscreteActor
from tianshou.utils.string import ToStringMixin

TDistFn = Callable[[Any], Distribution]


class ContinuousActorType(Enum):
    """Which actor an algorithm needs for continuous actions."""

    GAUSSIAN = "gaussian"
    """Outputs the mean and std of a Gaussian (PPO, SAC, ...)."""
    DETERMINISTIC = "deterministic"
    """Outputs the action itself (DDPG, TD3)."""
    UNSUPPORTED = "unsupported"
    """The algorithm does not handle continuous actions."""


@dataclass
class ActorFuture:
    """Holds an actor once it has been built (by :class:`ActorFactoryTransientStorageDecorator`),
    for factories that need it later, e.g. a critic sharing the actor's body.

    It pickles without its actor (a network has no place in a saved experiment) but as one
    object, so the factory filling it and the factories reading it still share it when an
    experiment is saved or sent to another process.
    """

    actor: nn.Module | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"actor": None}


class ActorFutureProviderProtocol(Protocol):
    def get_actor_future(self) -> ActorFuture:
        """The future that will hold the actor."""
        ...


class ActorFactory(ModuleFactory, ToStringMixin, ABC):
    """Builds an actor and the distribution function matching its output."""

    @abstractmethod
    def create_module(self, envs: Environments, device: TDevice) -> nn.Module:
        """Build the actor for ``envs`` on ``device``."""

    @abstractmethod
    def create_dist_fn(self, envs: Environments) -> TDistFn | None:
        """The function turning the actor's output into a distribution over actions, or None if
        the actor outputs actions (or Q-values) rather than distribution parameters.
        """

    @staticmethod
    def _init_linear(actor: nn.Module) -> None:
        """Initialise the actor's linear layers orthogonally (:func:`init_linear_orthogonal`)
        and scale a Gaussian actor's mean head by 0.01, so that initial actions have mean near
        0 (Andrychowicz et al. 2021, "What matters in on-policy RL", Fig. 24).
        """
        init_linear_orthogonal(actor)
        mu = getattr(actor, "mu", None)
        if isinstance(mu, nn.Module):
            with torch.no_grad():
                for layer in mu.modules():
                    if isinstance(layer, nn.Linear):
                        layer.weight.mul_(0.01)


class ActorFactoryContinuous(ActorFactory, ABC):
    """An actor factory for continuous envs (a type bound for builders)."""


class ActorFactoryContinuousDeterministicNet(ActorFactoryContinuous):
    """An MLP :class:`ContinuousActorDeterministic` with actions in ``[-1, 1]`` (the policy scales
    them to the action space).

    :param hidden_sizes: widths of the hidden layers.
    :param activation: activation after each hidden layer.
    """

    def __init__(self, hidden_sizes: Sequence[int], activation: ModuleType = nn.ReLU) -> None:
        self.hidden_sizes = hidden_sizes
        self.activation = activation

    def create_module(self, envs: Environments, device: TDevice) -> ContinuousActorDeterministic:
        envs.get_type().assert_continuous(self)
        return ContinuousActorDeterministic(
            preprocess_net=create_observation_body(envs, self.hidden_sizes, self.activation),
            action_shape=envs.get_action_shape(),
        ).to(device)

    def create_dist_fn(self, envs: Environments) -> None:
        return None


class ActorFactoryContinuousGaussianNet(ActorFactoryContinuous):
    """An MLP :class:`ContinuousActorProbabilistic` (a diagonal Gaussian over actions).

    Linear layers are initialised as in :meth:`ActorFactory._init_linear`, and a free log std
    starts at -0.5.

    :param hidden_sizes: widths of the hidden layers.
    :param unbounded: leave the mean unsquashed (else ``tanh`` keeps it in ``[-1, 1]``).
    :param conditioned_sigma: compute the std from the observation; else it is a free
        parameter per action dim.
    :param activation: activation after each hidden layer.
    """

    def __init__(
        self,
        hidden_sizes: Sequence[int],
        unbounded: bool = True,
        conditioned_sigma: bool = False,
        activation: ModuleType = nn.ReLU,
    ) -> None:
        self.hidden_sizes = hidden_sizes
        self.unbounded = unbounded
        self.conditioned_sigma = conditioned_sigma
        self.activation = activation

    def create_module(self, envs: Environments, device: TDevice) -> ContinuousActorProbabilistic:
        envs.get_type().assert_continuous(self)
        actor = ContinuousActorProbabilistic(
            preprocess_net=create_observation_body(envs, self.hidden_sizes, self.activation),
            action_shape=envs.get_action_shape(),
            unbounded=self.unbounded,
            conditioned_sigma=self.conditioned_sigma,
        )
        if not self.conditioned_sigma:
            nn.init.constant_(actor.sigma_param, -0.5)
        self._init_linear(actor)
        return actor.to(device)

    def create_dist_fn(self, envs: Environments) -> TDistFn:
        return DistributionFunctionFactoryIndependentGaussians().create_dist_fn(envs)


class ActorFactoryDiscreteNet(ActorFactory):
    """An MLP :class:`DiscreteActor` (a categorical distribution over actions).

    :param hidden_sizes: widths of the hidden layers.
    :param softmax_output: output probabilities; False outputs logits.
    :param activation: activation after each hidden layer.
    """

    def __init__(
        self,
        hidden_sizes: Sequence[int],
        softmax_output: bool = True,
        activation: ModuleType = nn.ReLU,
    ) -> None:
        self.hidden_sizes = hidden_sizes
        self.softmax_output = softmax_output
        self.activation = activation

    def create_module(self, envs: Environments, device: TDevice) -> DiscreteActor:
        envs.get_type().assert_discrete(self)
        return DiscreteActor(
            preprocess_net=create_observation_body(envs, self.hidden_sizes, self.activation),
            action_shape=envs.get_action_shape(),
            softmax_output=self.softmax_output,
        ).to(device)

    def create_dist_fn(self, envs: Environments) -> TDistFn:
        return DistributionFunctionFactoryCategorical(
            is_probs_input=self.softmax_output
        ).create_dist_fn(envs)


class ActorFactoryDefault(ActorFactory):
    """Builds the MLP actor that suits the env type: for continuous envs the one chosen by
    ``continuous_actor_type``, for discrete envs an :class:`ActorFactoryDiscreteNet` one.

    :param continuous_actor_type: the actor for continuous envs (the algorithm decides).
    :param hidden_sizes: widths of the hidden layers.
    :param hidden_activation: activation after each hidden layer.
    :param continuous_unbounded: Gaussian actors: leave the mean unsquashed.
    :param continuous_conditioned_sigma: Gaussian actors: compute the std from the observation.
    :param discrete_softmax: discrete actors: output probabilities (else logits).
    """

    DEFAULT_HIDDEN_SIZES = (64, 64)

    def __init__(
        self,
        continuous_actor_type: ContinuousActorType,
        hidden_sizes: Sequence[int] = DEFAULT_HIDDEN_SIZES,
        hidden_activation: ModuleType = nn.ReLU,
        continuous_unbounded: bool = False,
        continuous_conditioned_sigma: bool = False,
        discrete_softmax: bool = True,
    ) -> None:
        self.continuous_actor_type = continuous_actor_type
        self.hidden_sizes = hidden_sizes
        self.hidden_activation = hidden_activation
        self.continuous_unbounded = continuous_unbounded
        self.continuous_conditioned_sigma = continuous_conditioned_sigma
        self.discrete_softmax = discrete_softmax

    def _create_factory(self, envs: Environments) -> ActorFactory:
        if envs.get_type() == EnvType.DISCRETE:
            return ActorFactoryDiscreteNet(
                self.hidden_sizes,
                softmax_output=self.discrete_softmax,
                activation=self.hidden_activation,
            )
        match self.continuous_actor_type:
            case ContinuousActorType.GAUSSIAN:
                return ActorFactoryContinuousGaussianNet(
                    self.hidden_sizes,
                    unbounded=self.continuous_unbounded,
                    conditioned_sigma=self.continuous_conditioned_sigma,
                    activation=self.hidden_activation,
                )
            case ContinuousActorType.DETERMINISTIC:
                return ActorFactoryContinuousDeterministicNet(
                    self.hidden_sizes, activation=self.hidden_activation
                )
        raise ValueError(
            f"continuous_actor_type={self.continuous_actor_type}: this algorithm does not "
            f"support continuous environments (EnvType.CONTINUOUS); use a discrete env"
        )

    def create_module(self, envs: Environments, device: TDevice) -> nn.Module:
        return self._create_factory(envs).create_module(envs, device)

    def create_dist_fn(self, envs: Environments) -> TDistFn | None:
        return self._create_factory(envs).create_dist_fn(envs)


class ActorFactoryTransientStorageDecorator(ActorFactory):
    """Delegates to ``actor_factory`` and puts each actor it builds into ``actor_future``.

    :param actor_factory: the factory that builds the actor.
    :param actor_future: receives the most recently built actor (pickled empty, see
        :class:`ActorFuture`).
    """

    def __init__(self, actor_factory: ActorFactory, actor_future: ActorFuture) -> None:
        self.actor_factory = actor_factory
        self._actor_future = actor_future

    def create_module(self, envs: Environments, device: TDevice) -> nn.Module:
        module = self.actor_factory.create_module(envs, device)
        self._actor_future.actor = module
        return module

    def create_dist_fn(self, envs: Environments) -> TDistFn | None:
        return self.actor_factory.create_dist_fn(envs)


class IntermediateModuleFactoryFromActorFactory(IntermediateModuleFactory):
    """Uses an actor (whose output is a vector, e.g. a Q-network) as an intermediate module.

    :param actor_factory: builds the actor; it must be a :class:`ModuleWithVectorOutput`.
    """

    def __init__(self, actor_factory: ActorFactory) -> None:
        self.actor_factory = actor_factory

    def create_intermediate_module(self, envs: Environments, device: TDevice) -> IntermediateModule:
        actor = self.actor_factory.create_module(envs, device)
        if not isinstance(actor, ModuleWithVectorOutput):
            raise TypeError(
                f"{self.actor_factory} built a {type(actor).__name__}, but an intermediate "
                f"module must be a ModuleWithVectorOutput (so that its output width is known)"
            )
        return IntermediateModule(actor, actor.output_dim)
