"""The typed plumbing the algorithm factories share: which resolved parameters reach the
algorithm's constructor, and that every parameter reaches the policy or the algorithm."""

import inspect

import pytest

from tianshou.algorithm import DQN, SAC, DiscreteSAC
from tianshou.exploration import GaussianNoise
from tianshou.highlevel._algorithm_factory_base import (
    algorithm_kwargs,
    created_exploration_noise,
    policy_spaces,
    resolved_action_scaling,
)
from tianshou.highlevel.env import Environments
from tianshou.highlevel.experiment import (
    A2CExperimentBuilder,
    DDPGExperimentBuilder,
    DiscreteSACExperimentBuilder,
    DQNExperimentBuilder,
    ExperimentBuilder,
    IQNExperimentBuilder,
    NPGExperimentBuilder,
    PPOExperimentBuilder,
    REDQExperimentBuilder,
    ReinforceExperimentBuilder,
    SACExperimentBuilder,
    TD3ExperimentBuilder,
    TRPOExperimentBuilder,
)
from tianshou.highlevel.params.algorithm_params import (
    DiscreteSACParams,
    DQNParams,
    ParamTransformerData,
    SACParams,
    TD3Params,
)
from tianshou.highlevel.params.noise import MaxActionScaledGaussian
from tianshou.highlevel.params.optim import OptimizerFactoryFactoryAdam

from .conftest import make_envs


def transformer_data(envs: Environments) -> ParamTransformerData:
    return ParamTransformerData(
        envs=envs, device="cpu", optim_factory_default=OptimizerFactoryFactoryAdam()
    )


def test_the_algorithm_gets_the_fields_its_constructor_takes(pendulum: Environments) -> None:
    data = transformer_data(pendulum)
    sac = algorithm_kwargs(SAC, SACParams(deterministic_eval=True, gamma=0.9), data)
    # SAC's constructor takes deterministic_eval too; action scaling and noise are the policy's
    assert sac["deterministic_eval"] is True
    assert sac["gamma"] == 0.9
    assert {"action_scaling", "exploration_noise", "actor_lr"}.isdisjoint(sac)
    assert {"policy_optim", "critic_optim", "critic2_optim", "alpha"} <= set(sac)
    discrete_sac = algorithm_kwargs(DiscreteSAC, DiscreteSACParams(), data)
    assert "deterministic_eval" not in discrete_sac
    dqn = algorithm_kwargs(DQN, DQNParams(eps_training=0.3), data)
    assert "eps_training" not in dqn


def test_policy_values_are_resolved_typed(pendulum: Environments, cartpole: Environments) -> None:
    params = TD3Params(exploration_noise=MaxActionScaledGaussian(0.5))
    noise = created_exploration_noise(params, transformer_data(pendulum))
    assert isinstance(noise, GaussianNoise)
    assert resolved_action_scaling(params, transformer_data(pendulum)) is True
    assert resolved_action_scaling(params, transformer_data(cartpole)) is False
    spaces = policy_spaces(cartpole)
    assert spaces["action_space"] == cartpole.get_action_space()
    assert spaces["observation_space"] == cartpole.get_observation_space()


@pytest.mark.parametrize(
    ("builder_class", "task"),
    [
        (ReinforceExperimentBuilder, "CartPole-v1"),
        (A2CExperimentBuilder, "Pendulum-v1"),
        (PPOExperimentBuilder, "Pendulum-v1"),
        (NPGExperimentBuilder, "Pendulum-v1"),
        (TRPOExperimentBuilder, "Pendulum-v1"),
        (DQNExperimentBuilder, "CartPole-v1"),
        (IQNExperimentBuilder, "CartPole-v1"),
        (DDPGExperimentBuilder, "Pendulum-v1"),
        (REDQExperimentBuilder, "Pendulum-v1"),
        (TD3ExperimentBuilder, "Pendulum-v1"),
        (SACExperimentBuilder, "Pendulum-v1"),
        (DiscreteSACExperimentBuilder, "CartPole-v1"),
    ],
)
def test_every_resolved_parameter_reaches_the_policy_or_the_algorithm(
    builder_class: type[ExperimentBuilder], task: str
) -> None:
    """The algorithm takes the resolved fields its constructor names; the rest must all be
    keywords of the policy, which the factory passes them to: none is silently dropped."""
    envs = make_envs(task)
    factory = builder_class(None).build().algorithm_factory  # type: ignore[arg-type]
    algorithm = factory.create_algorithm(envs, "cpu")
    params = factory.params  # type: ignore[attr-defined]
    resolved = set(params.create_kwargs(transformer_data(envs)))
    algorithm_keys = set(inspect.signature(type(algorithm)).parameters)
    policy_keys = set(inspect.signature(type(algorithm.policy)).parameters)
    assert resolved - algorithm_keys - policy_keys == set()
