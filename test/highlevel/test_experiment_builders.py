"""The per-algorithm builders' shared shape: each turns its parameters, training config and
network settings into the algorithm factory of its algorithm, and stays importable from
``tianshou.highlevel.experiment`` where the published library defines it.

Nothing here trains (``test_experiment.py`` and ``test_experiment_builder.py`` do): the
experiments are only built, and their algorithm factories inspected.
"""

import dataclasses
from typing import Any

import pytest

import tianshou.highlevel.experiment as experiment_module
from tianshou.highlevel import experiment_builders
from tianshou.highlevel.algorithm import (
    A2CAlgorithmFactory,
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
from tianshou.highlevel.config import (
    OffPolicyTrainingConfig,
    OnPolicyTrainingConfig,
    TrainingConfig,
)
from tianshou.highlevel.env import EnvFactoryRegistered, VectorEnvType
from tianshou.highlevel.experiment import (
    A2CExperimentBuilder,
    DDPGExperimentBuilder,
    DiscreteSACExperimentBuilder,
    DQNExperimentBuilder,
    ExperimentBuilder,
    ExperimentConfig,
    IQNExperimentBuilder,
    NPGExperimentBuilder,
    OffPolicyExperimentBuilder,
    OnPolicyExperimentBuilder,
    PPOExperimentBuilder,
    REDQExperimentBuilder,
    ReinforceExperimentBuilder,
    SACExperimentBuilder,
    TD3ExperimentBuilder,
    TRPOExperimentBuilder,
)
from tianshou.highlevel.module.actor import ActorFactoryDefault
from tianshou.highlevel.module.critic import CriticFactoryDefault, CriticFactoryReuseActor
from tianshou.highlevel.module.special import ImplicitQuantileNetworkFactory
from tianshou.highlevel.params.algorithm_params import (
    A2CParams,
    DDPGParams,
    DiscreteSACParams,
    DQNParams,
    IQNParams,
    NPGParams,
    PPOParams,
    REDQParams,
    ReinforceParams,
    SACParams,
    TD3Params,
    TRPOParams,
)

# builder, its parameter setter, a non-default instance of its params, its algorithm factory
BUILDERS = [
    (
        ReinforceExperimentBuilder,
        "with_reinforce_params",
        ReinforceParams(lr=0.5),
        ReinforceAlgorithmFactory,
    ),
    (A2CExperimentBuilder, "with_a2c_params", A2CParams(lr=0.5), A2CAlgorithmFactory),
    (PPOExperimentBuilder, "with_ppo_params", PPOParams(lr=0.5), PPOAlgorithmFactory),
    (NPGExperimentBuilder, "with_npg_params", NPGParams(lr=0.5), NPGAlgorithmFactory),
    (TRPOExperimentBuilder, "with_trpo_params", TRPOParams(lr=0.5), TRPOAlgorithmFactory),
    (DQNExperimentBuilder, "with_dqn_params", DQNParams(lr=0.5), DQNAlgorithmFactory),
    (IQNExperimentBuilder, "with_iqn_params", IQNParams(lr=0.5), IQNAlgorithmFactory),
    (DDPGExperimentBuilder, "with_ddpg_params", DDPGParams(tau=0.5), DDPGAlgorithmFactory),
    (REDQExperimentBuilder, "with_redq_params", REDQParams(tau=0.5), REDQAlgorithmFactory),
    (SACExperimentBuilder, "with_sac_params", SACParams(tau=0.5), SACAlgorithmFactory),
    (
        DiscreteSACExperimentBuilder,
        "with_sac_params",
        DiscreteSACParams(tau=0.5),
        DiscreteSACAlgorithmFactory,
    ),
    (TD3ExperimentBuilder, "with_td3_params", TD3Params(tau=0.5), TD3AlgorithmFactory),
]


def make_builder(builder_class: type[ExperimentBuilder]) -> Any:
    """A builder (typed loosely, as the tests call algorithm-specific methods)."""
    env_factory = EnvFactoryRegistered(task="CartPole-v1", venv_type=VectorEnvType.DUMMY)
    return builder_class(env_factory, ExperimentConfig(device="cpu", persistence_enabled=False))


def algorithm_factory_of(builder: ExperimentBuilder) -> Any:
    return builder.build().algorithm_factory


@pytest.mark.parametrize(("builder_class", "setter", "params", "factory_class"), BUILDERS)
def test_each_builder_passes_its_params_and_training_config_to_its_algorithm_factory(
    builder_class: type[ExperimentBuilder], setter: str, params: Any, factory_class: type
) -> None:
    builder = make_builder(builder_class)
    default_factory = algorithm_factory_of(builder)
    assert type(default_factory) is factory_class
    assert default_factory.params == type(params)()
    assert default_factory.params != params

    training_config_class: type[TrainingConfig] = (
        OnPolicyTrainingConfig
        if issubclass(builder_class, OnPolicyExperimentBuilder)
        else OffPolicyTrainingConfig
    )
    assert type(default_factory.training_config) is training_config_class
    training_config = dataclasses.replace(default_factory.training_config, max_epochs=7)
    assert getattr(builder, setter)(params) is builder
    assert builder.training_config(training_config) is builder
    factory = algorithm_factory_of(builder)
    assert factory.params == params
    assert factory.training_config.max_epochs == 7
    assert builder_class.params_class is type(params)  # type: ignore[attr-defined]
    assert builder_class.training_config_class is training_config_class
    other = dataclasses.replace(params, gamma=0.5)
    assert builder.with_params(other) is builder  # the setter of any algorithm's builder
    assert algorithm_factory_of(builder).params == other


@pytest.mark.parametrize("builder_class", [entry[0] for entry in BUILDERS])
def test_builders_do_not_share_their_default_params(builder_class: type[ExperimentBuilder]) -> None:
    first, second = make_builder(builder_class), make_builder(builder_class)
    assert first._params == second._params
    assert first._params is not second._params


def test_builders_keep_the_published_training_kind() -> None:
    on_policy = {entry[0] for entry in BUILDERS[:5]}
    for builder_class, *_ in BUILDERS:
        on = builder_class in on_policy
        assert issubclass(builder_class, OnPolicyExperimentBuilder) is on, builder_class
        assert issubclass(builder_class, OffPolicyExperimentBuilder) is not on, builder_class


def test_network_factories_reach_the_algorithm_factory_in_its_order() -> None:
    ppo = algorithm_factory_of(
        make_builder(PPOExperimentBuilder)
        .with_actor_factory_default(hidden_sizes=(3,))
        .with_critic_factory_default(hidden_sizes=(4,))
    )
    assert ppo.actor_factory.actor_factory.hidden_sizes == (3,)
    assert ppo.critic_factory.hidden_sizes == (4,)

    td3 = algorithm_factory_of(
        make_builder(TD3ExperimentBuilder)
        .with_critic1_factory_default(hidden_sizes=(5,))
        .with_critic2_factory_default(hidden_sizes=(6,))
    )
    assert (td3.critic1_factory.hidden_sizes, td3.critic2_factory.hidden_sizes) == ((5,), (6,))

    redq = algorithm_factory_of(
        make_builder(REDQExperimentBuilder).with_critic_ensemble_factory_default(hidden_sizes=(8,))
    )
    assert redq.critic_ensemble_factory.hidden_sizes == (8,)

    default_critic = algorithm_factory_of(make_builder(PPOExperimentBuilder)).critic_factory
    assert isinstance(default_critic, CriticFactoryDefault)

    reinforce = algorithm_factory_of(
        make_builder(ReinforceExperimentBuilder).with_actor_factory_default(hidden_sizes=(2,))
    )
    assert reinforce.actor_factory.actor_factory.hidden_sizes == (2,)


def test_dqn_and_iqn_build_their_model_factories() -> None:
    dqn = algorithm_factory_of(
        make_builder(DQNExperimentBuilder).with_model_factory_default(hidden_sizes=(9,))
    )
    assert isinstance(dqn.model_factory, ActorFactoryDefault)
    assert dqn.model_factory.hidden_sizes == (9,)
    assert dqn.model_factory.discrete_softmax is False  # Q-values, not probabilities

    iqn = algorithm_factory_of(
        make_builder(IQNExperimentBuilder).with_iqn_params(
            IQNParams(hidden_sizes=(11,), num_cosines=5)
        )
    )
    assert isinstance(iqn.model_factory, ImplicitQuantileNetworkFactory)
    assert (iqn.model_factory.hidden_sizes, iqn.model_factory.num_cosines) == ((11,), 5)


def test_default_actors_of_sac_redq_and_discrete_sac() -> None:
    for builder_class in (SACExperimentBuilder, REDQExperimentBuilder):
        actor = algorithm_factory_of(make_builder(builder_class)).actor_factory.actor_factory
        assert actor.continuous_unbounded and actor.continuous_conditioned_sigma, builder_class
    ppo_actor = algorithm_factory_of(make_builder(PPOExperimentBuilder)).actor_factory.actor_factory
    assert not (ppo_actor.continuous_unbounded or ppo_actor.continuous_conditioned_sigma)
    # as published: choosing the hidden layers also chooses the default (bounded) Gaussian
    changed = algorithm_factory_of(
        make_builder(SACExperimentBuilder).with_actor_factory_default(hidden_sizes=(5,))
    ).actor_factory.actor_factory
    assert not changed.continuous_unbounded
    discrete_sac = algorithm_factory_of(make_builder(DiscreteSACExperimentBuilder))
    assert discrete_sac.actor_factory.actor_factory.discrete_softmax is False


def test_a_critic_sharing_the_actor_reads_the_actor_built_in_the_same_experiment() -> None:
    builder = make_builder(A2CExperimentBuilder).with_critic_factory_use_actor()
    factory = algorithm_factory_of(builder)
    assert isinstance(factory.critic_factory, CriticFactoryReuseActor)
    # the experiment works on a copy of the builder: its critic follows the copy's actor
    assert factory.critic_factory.actor_future is factory.actor_factory._actor_future
    assert factory.critic_factory.actor_future is not builder.get_actor_future()


def test_every_builder_is_published_in_the_experiment_module() -> None:
    for name in experiment_builders.__all__:
        assert getattr(experiment_module, name) is getattr(experiment_builders, name)
        assert name in experiment_module.__all__
    assert {entry[0].__name__ for entry in BUILDERS} == set(experiment_builders.__all__)
    with pytest.raises(AttributeError, match="has no attribute 'NoSuchExperimentBuilder'"):
        experiment_module.NoSuchExperimentBuilder  # noqa: B018
