"""Algorithm factories: turn module factories and parameter objects into the procedural objects.

An :class:`AlgorithmFactory` is the high-level door to exactly the objects the procedural API
builds by hand. It builds

* the networks, from module factories;
* the :class:`~tianshou.algorithm.algorithm_base.Policy`, from the typed fields of a
  ``<Algo>Params`` object (resolved by its transformers where they hold a high-level value, such
  as ``action_scaling="default"`` or a noise factory), and the
  :class:`~tianshou.algorithm.algorithm_base.Algorithm`, from the fields its constructor takes,
  which :meth:`~tianshou.highlevel.params.algorithm_params.Params.create_kwargs` resolves
  (learning rates into optimizer factories, an alpha factory into a learned alpha, ...);
* the training and test :class:`~tianshou.data.Collector`, with a replay buffer sized by the
  training config;
* the :class:`~tianshou.trainer.OnPolicyTrainer` or :class:`~tianshou.trainer.OffPolicyTrainer`
  (through ``algorithm.create_trainer``).

The factories differ only in the modules they build and the classes they instantiate:

* on-policy: :class:`ReinforceAlgorithmFactory` (actor only) and
  :class:`ActorCriticOnPolicyAlgorithmFactory` (A2C, PPO, NPG, TRPO: actor + state-value critic,
  one optimizer over both);
* off-policy: :class:`DiscreteCriticOnlyOffPolicyAlgorithmFactory` (DQN, IQN: one Q-network),
  :class:`DDPGAlgorithmFactory` (actor + Q-critic),
  :class:`ActorDualCriticsOffPolicyAlgorithmFactory` (TD3, SAC, DiscreteSAC: actor + twin
  critics) and :class:`REDQAlgorithmFactory` (actor + critic ensemble).

This module publishes them; they are defined, without import cycles, in the base module
(``_algorithm_factory_base``: collectors, trainers, the typed plumbing of parameters) and one
module per family (``_on_policy_algorithm_factories``, ``_q_learning_algorithm_factories``,
``_actor_critic_off_policy_algorithm_factories``).
"""

from tianshou.highlevel._actor_critic_off_policy_algorithm_factories import (
    ActorDualCriticsOffPolicyAlgorithmFactory,
    DDPGAlgorithmFactory,
    DiscreteSACAlgorithmFactory,
    REDQAlgorithmFactory,
    SACAlgorithmFactory,
    TD3AlgorithmFactory,
)
from tianshou.highlevel._algorithm_factory_base import (
    AlgorithmFactory,
    OffPolicyAlgorithmFactory,
    OnPolicyAlgorithmFactory,
)
from tianshou.highlevel._on_policy_algorithm_factories import (
    A2CAlgorithmFactory,
    ActorCriticOnPolicyAlgorithmFactory,
    NPGAlgorithmFactory,
    PPOAlgorithmFactory,
    ReinforceAlgorithmFactory,
    TRPOAlgorithmFactory,
)
from tianshou.highlevel._q_learning_algorithm_factories import (
    DiscreteCriticOnlyOffPolicyAlgorithmFactory,
    DQNAlgorithmFactory,
    IQNAlgorithmFactory,
)

__all__ = [
    "CHECKPOINT_DICT_KEY_MODEL",
    "CHECKPOINT_DICT_KEY_OBS_RMS",
    "A2CAlgorithmFactory",
    "ActorCriticOnPolicyAlgorithmFactory",
    "ActorDualCriticsOffPolicyAlgorithmFactory",
    "AlgorithmFactory",
    "DDPGAlgorithmFactory",
    "DQNAlgorithmFactory",
    "DiscreteCriticOnlyOffPolicyAlgorithmFactory",
    "DiscreteSACAlgorithmFactory",
    "IQNAlgorithmFactory",
    "NPGAlgorithmFactory",
    "OffPolicyAlgorithmFactory",
    "OnPolicyAlgorithmFactory",
    "PPOAlgorithmFactory",
    "REDQAlgorithmFactory",
    "ReinforceAlgorithmFactory",
    "SACAlgorithmFactory",
    "TD3AlgorithmFactory",
    "TRPOAlgorithmFactory",
]

CHECKPOINT_DICT_KEY_MODEL = "model"
"""Key of the model's state in a checkpoint dict."""
CHECKPOINT_DICT_KEY_OBS_RMS = "obs_rms"
"""Key of the observation normalisation statistics in a checkpoint dict."""
