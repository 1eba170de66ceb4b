"""Every builder with the published default parameters, as users of the published API run them.

Each experiment trains one short epoch with the default networks and parameters of its builder
and then watches 10 episodes (``ExperimentConfig``'s default ``watch=True``) without rendering;
the point is that the defaults fit together on a continuous and a discrete task wherever the
algorithm supports the action space, and that an experiment prints readably.
"""

import pytest

from test.highlevel.env_factory import ContinuousTestEnvFactory, DiscreteTestEnvFactory
from tianshou.highlevel.config import OffPolicyTrainingConfig, OnPolicyTrainingConfig
from tianshou.highlevel.env import EnvFactory
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
    PPOExperimentBuilder,
    REDQExperimentBuilder,
    ReinforceExperimentBuilder,
    SACExperimentBuilder,
    TD3ExperimentBuilder,
    TRPOExperimentBuilder,
)

CONTINUOUS_BUILDERS = [
    ReinforceExperimentBuilder,
    A2CExperimentBuilder,
    PPOExperimentBuilder,
    NPGExperimentBuilder,
    TRPOExperimentBuilder,
    DDPGExperimentBuilder,
    TD3ExperimentBuilder,
    SACExperimentBuilder,
    REDQExperimentBuilder,
]
DISCRETE_BUILDERS = [
    ReinforceExperimentBuilder,
    A2CExperimentBuilder,
    PPOExperimentBuilder,
    NPGExperimentBuilder,
    TRPOExperimentBuilder,
    DQNExperimentBuilder,
    IQNExperimentBuilder,
    DiscreteSACExperimentBuilder,
]


def create_training_config(
    builder_cls: type[ExperimentBuilder],
) -> OffPolicyTrainingConfig | OnPolicyTrainingConfig:
    """One epoch of 100 steps on 2 training and 2 test envs, otherwise the defaults."""
    config_cls = (
        OffPolicyTrainingConfig
        if issubclass(builder_cls, OffPolicyExperimentBuilder)
        else OnPolicyTrainingConfig
    )
    return config_cls(max_epochs=1, epoch_num_steps=100, num_training_envs=2, num_test_envs=2)


def run_with_defaults(builder_cls: type[ExperimentBuilder], env_factory: EnvFactory) -> None:
    builder = builder_cls(
        experiment_config=ExperimentConfig(persistence_enabled=False, device="cpu"),
        env_factory=env_factory,
        training_config=create_training_config(builder_cls),
    )
    experiment = builder.build()
    result = experiment.run(run_name="test")
    assert result.trainer_result is not None
    assert result.trainer_result.train_step >= 100
    assert builder_cls.__name__.removesuffix("ExperimentBuilder") in str(experiment)


@pytest.mark.parametrize("builder_cls", CONTINUOUS_BUILDERS)
def test_experiment_builder_continuous_default_params(
    builder_cls: type[ExperimentBuilder],
) -> None:
    run_with_defaults(builder_cls, ContinuousTestEnvFactory())


@pytest.mark.parametrize("builder_cls", DISCRETE_BUILDERS)
def test_experiment_builder_discrete_default_params(builder_cls: type[ExperimentBuilder]) -> None:
    run_with_defaults(builder_cls, DiscreteTestEnvFactory())
