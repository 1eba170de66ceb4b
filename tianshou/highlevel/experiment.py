"""Experiments: the high-level API's one object that builds, trains, persists and watches an agent.

An :class:`Experiment` holds everything needed to run an agent from scratch (env factory,
algorithm factory, training and experiment configuration) and nothing that a run creates, so it
can be pickled: saved next to a run's results (:meth:`Experiment.from_directory` reloads it) or
sent to the worker processes of a launcher. Experiments are built by the fluent
``<Algo>ExperimentBuilder`` classes (subclasses of :class:`ExperimentBuilder`, defined in
:mod:`tianshou.highlevel.experiment_builders`), e.g.::

    env_factory = EnvFactoryRegistered(task="CartPole-v1", venv_type=VectorEnvType.DUMMY)
    experiment = (
        PPOExperimentBuilder(env_factory)
        .with_ppo_params(PPOParams(lr=1e-3))
        .with_actor_factory_default(hidden_sizes=(64, 64))
        .build()
    )
    result = experiment.run()  # trains, persists to log/<name>, then watches the agent

A run writes into ``<persistence_base_dir>/<name>[/<run_name>]``: the logger's files, a log
file, the pickled experiment (``experiment.pkl``) and the policy (see
:class:`~tianshou.highlevel.persistence.PolicyPersistence`).
:meth:`ExperimentBuilder.build_seeded_collection` builds one experiment per seed, each in its own
subdirectory ``<name>/seed=<seed>`` of one experiment directory, which
:func:`tianshou.evaluation.rliable_evaluation.load_and_eval_experiment` evaluates as a whole.

This module publishes the experiment API; it is defined in modules layered without a cycle: the
experiment itself (``_experiment``), the builder base (``_experiment_builder``), the
per-algorithm builders (:mod:`~tianshou.highlevel.experiment_builders`).
"""

from tianshou.highlevel._experiment import Experiment, ExperimentCollection, ExperimentConfig
from tianshou.highlevel._experiment_builder import (
    ExperimentBuilder,
    OffPolicyExperimentBuilder,
    OnPolicyExperimentBuilder,
)
from tianshou.highlevel.experiment_builders import (
    A2CExperimentBuilder,
    DDPGExperimentBuilder,
    DiscreteSACExperimentBuilder,
    DQNExperimentBuilder,
    IQNExperimentBuilder,
    NPGExperimentBuilder,
    PPOExperimentBuilder,
    REDQExperimentBuilder,
    ReinforceExperimentBuilder,
    SACExperimentBuilder,
    TD3ExperimentBuilder,
    TRPOExperimentBuilder,
)
from tianshou.highlevel.experiment_result import ExperimentResult, SeedResults

__all__ = [
    "A2CExperimentBuilder",
    "DDPGExperimentBuilder",
    "DQNExperimentBuilder",
    "DiscreteSACExperimentBuilder",
    "Experiment",
    "ExperimentBuilder",
    "ExperimentCollection",
    "ExperimentConfig",
    "ExperimentResult",
    "IQNExperimentBuilder",
    "NPGExperimentBuilder",
    "OffPolicyExperimentBuilder",
    "OnPolicyExperimentBuilder",
    "PPOExperimentBuilder",
    "REDQExperimentBuilder",
    "ReinforceExperimentBuilder",
    "SACExperimentBuilder",
    "SeedResults",
    "TD3ExperimentBuilder",
    "TRPOExperimentBuilder",
]
