"""The experiment builders of the individual algorithms (``PPOExperimentBuilder`` and friends).

All share one shape, written once in :class:`AlgorithmExperimentBuilder`: the builder holds
the algorithm's parameters (defaults of its params class, set by ``with_<algo>_params``) and
builds the algorithm factory from the parameters, the training config, the network factories
chosen with the ``with_*_factory*`` methods of its network mixins
(:mod:`tianshou.highlevel.builder_mixins`) and the optimizer factory. A builder therefore
states only what differs: its training kind, params class, algorithm factory, network mixins
and parameter setter.

The builders are published in :mod:`tianshou.highlevel.experiment`, and are importable from
there.
"""

from collections.abc import Callable, Sequence
from typing import Generic, Self, TypeVar

from torch import nn

from tianshou.highlevel._experiment import ExperimentConfig
from tianshou.highlevel._experiment_builder import (
    ExperimentBuilder,
    OffPolicyExperimentBuilder,
    OnPolicyExperimentBuilder,
    TTrainingConfig,
)
from tianshou.highlevel.algorithm import (
    A2CAlgorithmFactory,
    AlgorithmFactory,
    DDPGAlgorithmFactory,
    DiscreteSACAlgorithmFactory,
    DQNAlgorithmFactory,
    IQNAlgorithmFactory,
    NPGAlgorithmFactory,
    PPOAlgorithmFactory,
    REDQAlgorithmFactory,
    ReinforceAlgorithmFactory,
    SACAlgorithmFactory,
    TD3AlgorithmFactory,
    TRPOAlgorithmFactory,
)
from tianshou.highlevel.builder_mixins import (
    NetworkFactory,
    _BuilderMixinActorFactory_ContinuousDeterministic,
    _BuilderMixinActorFactory_ContinuousGaussian,
    _BuilderMixinActorFactory_DiscreteOnly,
    _BuilderMixinCriticEnsembleFactory,
    _BuilderMixinDualCriticFactory,
    _BuilderMixinNetworkFactories,
    _BuilderMixinSingleCriticCanUseActorFactory,
)
from tianshou.highlevel.config import OffPolicyTrainingConfig, OnPolicyTrainingConfig
from tianshou.highlevel.env import EnvFactory, Environments
from tianshou.highlevel.module.actor import ActorFactoryDefault, ContinuousActorType
from tianshou.highlevel.module.core import ModuleFactory, TDevice
from tianshou.highlevel.module.intermediate import IntermediateModule, IntermediateModuleFactory
from tianshou.highlevel.module.special import ImplicitQuantileNetworkFactory
from tianshou.highlevel.params.algorithm_params import (
    A2CParams,
    DDPGParams,
    DiscreteSACParams,
    DQNParams,
    IQNParams,
    NPGParams,
    Params,
    PPOParams,
    REDQParams,
    ReinforceParams,
    SACParams,
    TD3Params,
    TRPOParams,
)
from tianshou.utils.net.common import ModuleType, Net

__all__ = [
    "A2CExperimentBuilder",
    "DDPGExperimentBuilder",
    "DQNExperimentBuilder",
    "DiscreteSACExperimentBuilder",
    "IQNExperimentBuilder",
    "NPGExperimentBuilder",
    "PPOExperimentBuilder",
    "REDQExperimentBuilder",
    "ReinforceExperimentBuilder",
    "SACExperimentBuilder",
    "TD3ExperimentBuilder",
    "TRPOExperimentBuilder",
]

TParams = TypeVar("TParams", bound=Params)


class AlgorithmExperimentBuilder(
    ExperimentBuilder[TTrainingConfig],
    _BuilderMixinNetworkFactories,
    Generic[TTrainingConfig, TParams],
):
    """The shape every per-algorithm builder shares.

    A subclass sets two class attributes, ``params_class`` (the default parameters are its
    instance with default values) and ``_algorithm_factory_class`` (called with the parameters,
    the training config, the network factories and the optimizer factory factory), and adds a
    public ``with_<algo>_params`` that calls :meth:`with_params`. Code that configures any
    algorithm's builder (a hyper-parameter search) uses ``params_class`` and
    :meth:`with_params` directly.

    :param env_factory: builds the envs.
    :param experiment_config: how the experiment runs; None: :class:`ExperimentConfig`
        defaults.
    :param training_config: the training hyper-parameters; None: the defaults of the
        builder's training config class.
    """

    params_class: type[TParams]
    """The algorithm's parameter dataclass."""
    _algorithm_factory_class: Callable[..., AlgorithmFactory]

    def __init__(
        self,
        env_factory: EnvFactory,
        experiment_config: ExperimentConfig | None = None,
        training_config: TTrainingConfig | None = None,
    ) -> None:
        super().__init__(env_factory, experiment_config, training_config)
        self._params = self.params_class()

    def with_params(self, params: TParams) -> Self:
        """Set the algorithm's parameters (an instance of :attr:`params_class`)."""
        self._params = params
        return self

    def _create_algorithm_factory(self) -> AlgorithmFactory:
        return self._algorithm_factory_class(
            self._params,
            self._training_config,
            *self._get_network_factories(),
            self._get_optim_factory(),
        )


class ReinforceExperimentBuilder(
    OnPolicyExperimentBuilder,
    AlgorithmExperimentBuilder[OnPolicyTrainingConfig, ReinforceParams],
    _BuilderMixinActorFactory_ContinuousGaussian,
):
    """Builds REINFORCE experiments (continuous or discrete actions).

    Arguments as in :class:`~tianshou.highlevel.experiment.ExperimentBuilder`.
    """

    params_class = ReinforceParams
    _algorithm_factory_class = ReinforceAlgorithmFactory

    def with_reinforce_params(self, params: ReinforceParams) -> Self:
        """Set the algorithm's parameters."""
        return self.with_params(params)


class A2CExperimentBuilder(
    OnPolicyExperimentBuilder,
    AlgorithmExperimentBuilder[OnPolicyTrainingConfig, A2CParams],
    _BuilderMixinActorFactory_ContinuousGaussian,
    _BuilderMixinSingleCriticCanUseActorFactory,
):
    """Builds A2C experiments (continuous or discrete actions).

    Arguments as in :class:`~tianshou.highlevel.experiment.ExperimentBuilder`.
    """

    params_class = A2CParams
    _algorithm_factory_class = A2CAlgorithmFactory

    def with_a2c_params(self, params: A2CParams) -> Self:
        """Set the algorithm's parameters."""
        return self.with_params(params)


class PPOExperimentBuilder(
    OnPolicyExperimentBuilder,
    AlgorithmExperimentBuilder[OnPolicyTrainingConfig, PPOParams],
    _BuilderMixinActorFactory_ContinuousGaussian,
    _BuilderMixinSingleCriticCanUseActorFactory,
):
    """Builds PPO experiments (continuous or discrete actions).

    Arguments as in :class:`~tianshou.highlevel.experiment.ExperimentBuilder`.
    """

    params_class = PPOParams
    _algorithm_factory_class = PPOAlgorithmFactory

    def with_ppo_params(self, params: PPOParams) -> Self:
        """Set the algorithm's parameters."""
        return self.with_params(params)


class NPGExperimentBuilder(
    OnPolicyExperimentBuilder,
    AlgorithmExperimentBuilder[OnPolicyTrainingConfig, NPGParams],
    _BuilderMixinActorFactory_ContinuousGaussian,
    _BuilderMixinSingleCriticCanUseActorFactory,
):
    """Builds NPG (natural policy gradient) experiments (continuous or discrete actions).

    Arguments as in :class:`~tianshou.highlevel.experiment.ExperimentBuilder`.
    """

    params_class = NPGParams
    _algorithm_factory_class = NPGAlgorithmFactory

    def with_npg_params(self, params: NPGParams) -> Self:
        """Set the algorithm's parameters."""
        return self.with_params(params)


class TRPOExperimentBuilder(
    OnPolicyExperimentBuilder,
    AlgorithmExperimentBuilder[OnPolicyTrainingConfig, TRPOParams],
    _BuilderMixinActorFactory_ContinuousGaussian,
    _BuilderMixinSingleCriticCanUseActorFactory,
):
    """Builds TRPO experiments (continuous or discrete actions).

    Arguments as in :class:`~tianshou.highlevel.experiment.ExperimentBuilder`.
    """

    params_class = TRPOParams
    _algorithm_factory_class = TRPOAlgorithmFactory

    def with_trpo_params(self, params: TRPOParams) -> Self:
        """Set the algorithm's parameters."""
        return self.with_params(params)


def _default_q_network_factory(
    hidden_sizes: Sequence[int] = ActorFactoryDefault.DEFAULT_HIDDEN_SIZES,
    hidden_activation: ModuleType = nn.ReLU,
) -> ActorFactoryDefault:
    """An MLP with one output per action, as a Q-network (a discrete actor outputting logits)."""
    return ActorFactoryDefault(
        ContinuousActorType.UNSUPPORTED,
        hidden_sizes,
        hidden_activation=hidden_activation,
        discrete_softmax=False,
    )


class _IntermediateModuleFactoryMLP(IntermediateModuleFactory):
    """An MLP on flattened observations whose last hidden layer is the output (IQN's default
    body).

    :param hidden_sizes: widths of the layers.
    :param activation: activation after each layer.
    """

    def __init__(
        self,
        hidden_sizes: Sequence[int] = ActorFactoryDefault.DEFAULT_HIDDEN_SIZES,
        activation: ModuleType = nn.ReLU,
    ) -> None:
        self.hidden_sizes = hidden_sizes
        self.activation = activation

    def create_intermediate_module(self, envs: Environments, device: TDevice) -> IntermediateModule:
        net = Net(
            state_shape=envs.get_observation_shape(),
            hidden_sizes=self.hidden_sizes,
            activation=self.activation,
        ).to(device)
        return IntermediateModule(net, net.output_dim)


class DQNExperimentBuilder(
    OffPolicyExperimentBuilder, AlgorithmExperimentBuilder[OffPolicyTrainingConfig, DQNParams]
):
    """Builds DQN experiments (discrete actions).

    Arguments as in :class:`~tianshou.highlevel.experiment.ExperimentBuilder`.
    """

    params_class = DQNParams
    _algorithm_factory_class = DQNAlgorithmFactory

    def __init__(
        self,
        env_factory: EnvFactory,
        experiment_config: ExperimentConfig | None = None,
        training_config: OffPolicyTrainingConfig | None = None,
    ) -> None:
        super().__init__(env_factory, experiment_config, training_config)
        self._model_factory: ModuleFactory = _default_q_network_factory()

    def with_dqn_params(self, params: DQNParams) -> Self:
        """Set the algorithm's parameters."""
        return self.with_params(params)

    def with_model_factory(self, module_factory: ModuleFactory) -> Self:
        """Set the factory of the Q-network (one output per action)."""
        self._model_factory = module_factory
        return self

    def with_model_factory_default(
        self,
        hidden_sizes: Sequence[int] = ActorFactoryDefault.DEFAULT_HIDDEN_SIZES,
        hidden_activation: ModuleType = nn.ReLU,
    ) -> Self:
        """Use an MLP Q-network.

        :param hidden_sizes: widths of the hidden layers.
        :param hidden_activation: activation after each hidden layer.
        """
        self._model_factory = _default_q_network_factory(hidden_sizes, hidden_activation)
        return self

    def with_default_networks(self, hidden_sizes: Sequence[int]) -> Self:
        self.with_model_factory_default(hidden_sizes)
        return super().with_default_networks(hidden_sizes)

    def _get_network_factories(self) -> tuple[NetworkFactory, ...]:
        return (self._model_factory,)


class IQNExperimentBuilder(
    OffPolicyExperimentBuilder, AlgorithmExperimentBuilder[OffPolicyTrainingConfig, IQNParams]
):
    """Builds IQN (implicit quantile network) experiments (discrete actions).

    Arguments as in :class:`~tianshou.highlevel.experiment.ExperimentBuilder`.
    """

    params_class = IQNParams
    _algorithm_factory_class = IQNAlgorithmFactory

    def __init__(
        self,
        env_factory: EnvFactory,
        experiment_config: ExperimentConfig | None = None,
        training_config: OffPolicyTrainingConfig | None = None,
    ) -> None:
        super().__init__(env_factory, experiment_config, training_config)
        self._preprocess_network_factory: IntermediateModuleFactory = (
            _IntermediateModuleFactoryMLP()
        )

    def with_iqn_params(self, params: IQNParams) -> Self:
        """Set the algorithm's parameters."""
        return self.with_params(params)

    def with_preprocess_network_factory(self, module_factory: IntermediateModuleFactory) -> Self:
        """Set the factory of the network mapping observations to the features that the
        quantile head (sized by the params' ``hidden_sizes`` and ``num_cosines``) sits on.
        """
        self._preprocess_network_factory = module_factory
        return self

    def with_default_networks(self, hidden_sizes: Sequence[int]) -> Self:
        """Use an MLP of ``hidden_sizes`` as the preprocess network (the quantile head is sized
        by the params' ``hidden_sizes``)."""
        self._preprocess_network_factory = _IntermediateModuleFactoryMLP(hidden_sizes)
        return super().with_default_networks(hidden_sizes)

    def _get_network_factories(self) -> tuple[NetworkFactory, ...]:
        model_factory = ImplicitQuantileNetworkFactory(
            self._preprocess_network_factory,
            hidden_sizes=self._params.hidden_sizes,
            num_cosines=self._params.num_cosines,
        )
        return (model_factory,)


class DDPGExperimentBuilder(
    OffPolicyExperimentBuilder,
    AlgorithmExperimentBuilder[OffPolicyTrainingConfig, DDPGParams],
    _BuilderMixinActorFactory_ContinuousDeterministic,
    _BuilderMixinSingleCriticCanUseActorFactory,
):
    """Builds DDPG experiments (continuous actions).

    Arguments as in :class:`~tianshou.highlevel.experiment.ExperimentBuilder`.
    """

    params_class = DDPGParams
    _algorithm_factory_class = DDPGAlgorithmFactory

    def with_ddpg_params(self, params: DDPGParams) -> Self:
        """Set the algorithm's parameters."""
        return self.with_params(params)


class REDQExperimentBuilder(
    OffPolicyExperimentBuilder,
    AlgorithmExperimentBuilder[OffPolicyTrainingConfig, REDQParams],
    _BuilderMixinActorFactory_ContinuousGaussian,
    _BuilderMixinCriticEnsembleFactory,
):
    """Builds REDQ experiments (continuous actions).

    The default actor is a Gaussian with unbounded mean and observation-dependent standard
    deviation, as the policy squashes its samples with ``tanh``; pass
    ``continuous_unbounded=True, continuous_conditioned_sigma=True`` to
    ``with_actor_factory_default`` to keep them when changing the hidden layers.

    Arguments as in :class:`~tianshou.highlevel.experiment.ExperimentBuilder`.
    """

    params_class = REDQParams
    _algorithm_factory_class = REDQAlgorithmFactory
    _default_actor_continuous_unbounded = True
    _default_actor_continuous_conditioned_sigma = True

    def with_redq_params(self, params: REDQParams) -> Self:
        """Set the algorithm's parameters."""
        return self.with_params(params)


class SACExperimentBuilder(
    OffPolicyExperimentBuilder,
    AlgorithmExperimentBuilder[OffPolicyTrainingConfig, SACParams],
    _BuilderMixinActorFactory_ContinuousGaussian,
    _BuilderMixinDualCriticFactory,
):
    """Builds SAC experiments (continuous actions).

    The default actor is a Gaussian with unbounded mean and observation-dependent standard
    deviation, as the policy squashes its samples with ``tanh``; pass
    ``continuous_unbounded=True, continuous_conditioned_sigma=True`` to
    ``with_actor_factory_default`` to keep them when changing the hidden layers.

    Arguments as in :class:`~tianshou.highlevel.experiment.ExperimentBuilder`.
    """

    params_class = SACParams
    _algorithm_factory_class = SACAlgorithmFactory
    _default_actor_continuous_unbounded = True
    _default_actor_continuous_conditioned_sigma = True

    def with_sac_params(self, params: SACParams) -> Self:
        """Set the algorithm's parameters."""
        return self.with_params(params)


class DiscreteSACExperimentBuilder(
    OffPolicyExperimentBuilder,
    AlgorithmExperimentBuilder[OffPolicyTrainingConfig, DiscreteSACParams],
    _BuilderMixinActorFactory_DiscreteOnly,
    _BuilderMixinDualCriticFactory,
):
    """Builds discrete SAC experiments (discrete actions; the default actor outputs logits).

    Arguments as in :class:`~tianshou.highlevel.experiment.ExperimentBuilder`.
    """

    params_class = DiscreteSACParams
    _algorithm_factory_class = DiscreteSACAlgorithmFactory
    _discrete_softmax = False

    def with_sac_params(self, params: DiscreteSACParams) -> Self:
        """Set the algorithm's parameters."""
        return self.with_params(params)


class TD3ExperimentBuilder(
    OffPolicyExperimentBuilder,
    AlgorithmExperimentBuilder[OffPolicyTrainingConfig, TD3Params],
    _BuilderMixinActorFactory_ContinuousDeterministic,
    _BuilderMixinDualCriticFactory,
):
    """Builds TD3 experiments (continuous actions).

    Arguments as in :class:`~tianshou.highlevel.experiment.ExperimentBuilder`.
    """

    params_class = TD3Params
    _algorithm_factory_class = TD3AlgorithmFactory

    def with_td3_params(self, params: TD3Params) -> Self:
        """Set the algorithm's parameters."""
        return self.with_params(params)
