"""Parameter objects of the high-level API: one dataclass per algorithm (``<Algo>Params``).

Their fields carry the keyword names of the procedural Policy and Algorithm constructors
(:mod:`tianshou.algorithm.modelfree`) with the same defaults, plus high-level conveniences that
need the environments or the experiment to be resolved: learning rates and optimizer choices
instead of optimizer factories, factories of values scaled by the action range, of exploration
noise and of a learned entropy coefficient, and ``"default"`` for action scaling.

:meth:`Params.create_kwargs` resolves them with :class:`ParamTransformer` s into a dict holding
only constructor keyword arguments, ready for the procedural classes:

* optimizers: ``optim`` (one model), ``policy_optim`` + ``critic_optim`` (actor and critic) or
  ``policy_optim`` + ``critic_optim`` + ``critic2_optim`` (actor and two critics), each an
  :class:`~tianshou.algorithm.optim.OptimizerFactory`; the ``*lr``, ``*lr_scheduler`` and
  ``*optim`` fields of the parameter object are consumed;
* ``exploration_noise``: a :class:`~tianshou.exploration.BaseNoise`, None or ``"default"``
  (which the policy resolves as the procedural API does);
* ``alpha``: a float or an :class:`~tianshou.algorithm.modelfree.entropy_coefficient.AutoAlpha`;
* ``policy_noise``, ``noise_clip``: floats;
* ``action_scaling``: a bool (``"default"``: True exactly for continuous actions).

The algorithm factory builds the Policy from the typed fields it takes (e.g. ``action_scaling``,
resolved by :class:`ParamTransformerActionScaling`, ``deterministic_eval``, ``eps_training``)
and passes the Algorithm the resolved keyword arguments its constructor takes. The transformers
are defined in ``_param_transformers`` and published here.

>>> params = DQNParams(lr=1e-3, gamma=0.9, n_step_return_horizon=3, target_update_freq=320,
...     eps_training=0.3)
>>> params.target_update_freq
320
"""

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any, Literal

from tianshou.exploration import BaseNoise
from tianshou.highlevel.params._param_transformers import (
    GetParamTransformersProtocol,
    ParamTransformer,
    ParamTransformerActionScaling,
    ParamTransformerAutoAlpha,
    ParamTransformerChangeValue,
    ParamTransformerData,
    ParamTransformerDrop,
    ParamTransformerFloatEnvParamFactory,
    ParamTransformerNoiseFactory,
    ParamTransformerOptimFactory,
    ParamTransformerRename,
)
from tianshou.highlevel.params.alpha import AutoAlphaFactory
from tianshou.highlevel.params.env_param import FloatEnvValueFactory
from tianshou.highlevel.params.lr_scheduler import LRSchedulerFactoryFactory
from tianshou.highlevel.params.noise import NoiseFactory
from tianshou.highlevel.params.optim import OptimizerFactoryFactory
from tianshou.utils.string import ToStringMixin

__all__ = [
    "A2CParams",
    "ActorCriticOnPolicyParams",
    "DDPGParams",
    "DQNParams",
    "DiscreteSACParams",
    "GetParamTransformersProtocol",
    "IQNParams",
    "NPGParams",
    "OnPolicyAlgorithmParams",
    "PPOParams",
    "ParamTransformer",
    "ParamTransformerActionScaling",
    "ParamTransformerAutoAlpha",
    "ParamTransformerChangeValue",
    "ParamTransformerData",
    "ParamTransformerDrop",
    "ParamTransformerFloatEnvParamFactory",
    "ParamTransformerNoiseFactory",
    "ParamTransformerOptimFactory",
    "ParamTransformerRename",
    "Params",
    "ParamsMixinActionScaling",
    "ParamsMixinActionScalingAndBounding",
    "ParamsMixinActorAndCritic",
    "ParamsMixinActorAndDualCritics",
    "ParamsMixinAlpha",
    "ParamsMixinDeterministicEval",
    "ParamsMixinExplorationNoise",
    "ParamsMixinGamma",
    "ParamsMixinGeneralAdvantageEstimation",
    "ParamsMixinNStepReturnHorizon",
    "ParamsMixinSingleModel",
    "ParamsMixinTau",
    "QLearningOffPolicyParams",
    "REDQParams",
    "ReinforceParams",
    "SACParams",
    "TD3Params",
    "TRPOParams",
]


@dataclass(kw_only=True)
class Params(GetParamTransformersProtocol, ToStringMixin):
    """The base of all parameter objects."""

    def create_kwargs(self, data: ParamTransformerData) -> dict[str, Any]:
        """The fields as constructor keyword arguments, resolved by the transformers.

        :param data: the environments, device and default optimizer to resolve them with.
        """
        params = {field.name: getattr(self, field.name) for field in fields(self)}
        for transformer in self._get_param_transformers():
            transformer.transform(params, data)
        return params


@dataclass(kw_only=True)
class ParamsMixinGamma:
    """:param gamma: discount factor in [0, 1] of future rewards."""

    gamma: float = 0.99


@dataclass(kw_only=True)
class ParamsMixinTau:
    """:param tau: Polyak factor of the target networks' soft update (1: hard copy)."""

    tau: float = 0.005


@dataclass(kw_only=True)
class ParamsMixinNStepReturnHorizon:
    """The horizon of n-step return targets.

    :param n_step_return_horizon: steps of observed rewards in the TD target before it
        bootstraps.
    """

    n_step_return_horizon: int = 1


@dataclass(kw_only=True)
class ParamsMixinDeterministicEval:
    """:param deterministic_eval: act with the distribution's mode outside training."""

    deterministic_eval: bool = False


@dataclass(kw_only=True)
class ParamsMixinActionScaling(GetParamTransformersProtocol):
    """Whether the policy scales its raw actions to the action space.

    :param action_scaling: map raw actions from [-1, 1] to the action space's bounds;
        ``"default"``: for continuous actions only.
    """

    action_scaling: bool | Literal["default"] = "default"

    def _get_param_transformers(self) -> list[ParamTransformer]:
        return [*super()._get_param_transformers(), ParamTransformerActionScaling("action_scaling")]


@dataclass(kw_only=True)
class ParamsMixinActionScalingAndBounding(ParamsMixinActionScaling):
    """Action scaling, plus how raw actions are bounded before it.

    :param action_bound_method: how raw actions are brought into [-1, 1]: ``"clip"``,
        ``"tanh"`` or None (not at all).
    """

    action_bound_method: Literal["clip", "tanh"] | None = "clip"


@dataclass(kw_only=True)
class ParamsMixinExplorationNoise(GetParamTransformersProtocol):
    """The exploration noise of off-policy continuous-control algorithms.

    :param exploration_noise: noise added to actions during training collection: a
        :class:`~tianshou.exploration.BaseNoise`, a :class:`NoiseFactory`, ``"default"`` (the
        policy's own default, ``GaussianNoise(sigma=0.1)`` on its raw output) or None.
    """

    exploration_noise: BaseNoise | Literal["default"] | NoiseFactory | None = None

    def _get_param_transformers(self) -> list[ParamTransformer]:
        return [
            *super()._get_param_transformers(),
            ParamTransformerNoiseFactory("exploration_noise"),
        ]


@dataclass(kw_only=True)
class ParamsMixinSingleModel(GetParamTransformersProtocol):
    """One optimizer for all of the algorithm's modules.

    :param optim: the optimizer type (None: the experiment's default, Adam unless changed).
    :param lr: its learning rate.
    :param lr_scheduler: schedules the learning rate (None: constant).
    """

    optim: OptimizerFactoryFactory | None = None
    lr: float = 1e-3
    lr_scheduler: LRSchedulerFactoryFactory | None = None

    def _get_param_transformers(self) -> list[ParamTransformer]:
        return [
            *super()._get_param_transformers(),
            ParamTransformerOptimFactory("optim", "lr", "lr_scheduler", "optim"),
        ]


@dataclass(kw_only=True)
class ParamsMixinActorAndCritic(GetParamTransformersProtocol):
    """Separate optimizers of the actor (``policy_optim``) and the critic (``critic_optim``).

    :param actor_optim: the actor's optimizer type (None: the experiment's default).
    :param critic_optim: the critic's optimizer type (None: the experiment's default).
    :param actor_lr: the actor's learning rate.
    :param critic_lr: the critic's learning rate.
    :param actor_lr_scheduler: schedules the actor's learning rate (None: constant).
    :param critic_lr_scheduler: schedules the critic's learning rate (None: constant).
    """

    actor_optim: OptimizerFactoryFactory | None = None
    critic_optim: OptimizerFactoryFactory | None = None
    actor_lr: float = 1e-3
    critic_lr: float = 1e-3
    actor_lr_scheduler: LRSchedulerFactoryFactory | None = None
    critic_lr_scheduler: LRSchedulerFactoryFactory | None = None

    def _get_param_transformers(self) -> list[ParamTransformer]:
        return [
            *super()._get_param_transformers(),
            ParamTransformerOptimFactory(
                "actor_optim", "actor_lr", "actor_lr_scheduler", "policy_optim"
            ),
            ParamTransformerOptimFactory(
                "critic_optim", "critic_lr", "critic_lr_scheduler", "critic_optim"
            ),
        ]


@dataclass(kw_only=True)
class ParamsMixinActorAndDualCritics(GetParamTransformersProtocol):
    """Separate optimizers of the actor (``policy_optim``) and of each of two critics
    (``critic_optim``, ``critic2_optim``).

    :param actor_optim: the actor's optimizer type (None: the experiment's default).
    :param critic1_optim: the first critic's optimizer type (None: the experiment's default).
    :param critic2_optim: the second critic's optimizer type (None: the experiment's default).
    :param actor_lr: the actor's learning rate.
    :param critic1_lr: the first critic's learning rate.
    :param critic2_lr: the second critic's learning rate.
    :param actor_lr_scheduler: schedules the actor's learning rate (None: constant).
    :param critic1_lr_scheduler: schedules the first critic's learning rate (None: constant).
    :param critic2_lr_scheduler: schedules the second critic's learning rate (None: constant).
    """

    actor_optim: OptimizerFactoryFactory | None = None
    critic1_optim: OptimizerFactoryFactory | None = None
    critic2_optim: OptimizerFactoryFactory | None = None
    actor_lr: float = 1e-3
    critic1_lr: float = 1e-3
    critic2_lr: float = 1e-3
    actor_lr_scheduler: LRSchedulerFactoryFactory | None = None
    critic1_lr_scheduler: LRSchedulerFactoryFactory | None = None
    critic2_lr_scheduler: LRSchedulerFactoryFactory | None = None

    def _get_param_transformers(self) -> list[ParamTransformer]:
        return [
            *super()._get_param_transformers(),
            ParamTransformerOptimFactory(
                "actor_optim", "actor_lr", "actor_lr_scheduler", "policy_optim"
            ),
            ParamTransformerOptimFactory(
                "critic1_optim", "critic1_lr", "critic1_lr_scheduler", "critic_optim"
            ),
            ParamTransformerOptimFactory(
                "critic2_optim", "critic2_lr", "critic2_lr_scheduler", "critic2_optim"
            ),
        ]


@dataclass(kw_only=True)
class ParamsMixinAlpha(GetParamTransformersProtocol):
    """The entropy coefficient of the maximum-entropy algorithms (SAC, discrete SAC, REDQ).

    :param alpha: the entropy coefficient: a float (fixed) or an :class:`AutoAlphaFactory`
        (learned, e.g. ``AutoAlphaFactoryDefault(lr=3e-4)``).
    """

    alpha: float | AutoAlphaFactory = 0.2

    def _get_param_transformers(self) -> list[ParamTransformer]:
        return [*super()._get_param_transformers(), ParamTransformerAutoAlpha("alpha")]


@dataclass(kw_only=True)
class ParamsMixinGeneralAdvantageEstimation(GetParamTransformersProtocol):
    """Generalized advantage estimation (Schulman et al. 2016).

    :param gae_lambda: the GAE lambda in [0, 1]: 0 is the one-step TD advantage (low variance,
        biased), 1 the Monte-Carlo advantage (unbiased, high variance).
    :param max_batchsize: observations per forward pass of the critic while computing advantages
        (memory, not learning).
    """

    gae_lambda: float = 0.95
    max_batchsize: int = 256


@dataclass(kw_only=True)
class OnPolicyAlgorithmParams(
    Params,
    ParamsMixinGamma,
    ParamsMixinActionScalingAndBounding,
    ParamsMixinSingleModel,
    ParamsMixinDeterministicEval,
):
    """Parameters shared by the on-policy algorithms (one optimizer for all their modules)."""


@dataclass(kw_only=True)
class ReinforceParams(OnPolicyAlgorithmParams):
    """Parameters of :class:`~tianshou.algorithm.Reinforce`.

    :param return_standardization: standardise the returns of each batch to zero mean and unit
        variance.
    """

    return_standardization: bool = False


@dataclass(kw_only=True)
class ActorCriticOnPolicyParams(OnPolicyAlgorithmParams):
    """Parameters shared by the on-policy actor-critic algorithms.

    :param return_scaling: divide the critic's return targets by a running estimate of their
        standard deviation.
    """

    return_scaling: bool = False


@dataclass(kw_only=True)
class A2CParams(ActorCriticOnPolicyParams, ParamsMixinGeneralAdvantageEstimation):
    """Parameters of :class:`~tianshou.algorithm.A2C`.

    :param vf_coef: weight of the critic's loss in the joint loss.
    :param ent_coef: weight of the entropy bonus in the joint loss.
    :param max_grad_norm: clip the gradient norm to this (None: no clipping).
    """

    vf_coef: float = 0.5
    ent_coef: float = 0.01
    max_grad_norm: float | None = None


@dataclass(kw_only=True)
class PPOParams(A2CParams):
    """Parameters of :class:`~tianshou.algorithm.PPO`.

    :param eps_clip: the clipping range of the probability ratio.
    :param dual_clip: bound on the loss of negative advantages (dual clip, Ye et al. 2020),
        greater than 1; None: off.
    :param value_clip: clip the critic's update around its old predictions.
    :param advantage_normalization: standardise the advantages of each mini-batch.
    :param recompute_advantage: recompute advantages before every pass over the data.
    """

    eps_clip: float = 0.2
    dual_clip: float | None = None
    value_clip: bool = False
    advantage_normalization: bool = True
    recompute_advantage: bool = False


@dataclass(kw_only=True)
class NPGParams(ActorCriticOnPolicyParams, ParamsMixinGeneralAdvantageEstimation):
    """Parameters of :class:`~tianshou.algorithm.NPG`.

    :param optim_critic_iters: critic gradient steps per mini-batch.
    :param trust_region_size: the step size of the natural-gradient update.
    :param advantage_normalization: standardise the advantages of each batch.
    """

    optim_critic_iters: int = 5
    trust_region_size: float = 0.5
    advantage_normalization: bool = True


@dataclass(kw_only=True)
class TRPOParams(NPGParams):
    """Parameters of :class:`~tianshou.algorithm.TRPO`.

    :param max_kl: bound on the KL divergence between the old and the updated policy.
    :param backtrack_coeff: factor by which the line search shrinks the step.
    :param max_backtracks: line-search steps before the update is abandoned.
    """

    max_kl: float = 0.01
    backtrack_coeff: float = 0.8
    max_backtracks: int = 10


@dataclass(kw_only=True)
class QLearningOffPolicyParams(
    Params, ParamsMixinGamma, ParamsMixinSingleModel, ParamsMixinNStepReturnHorizon
):
    """Parameters shared by the Q-learning algorithms.

    :param target_update_freq: updates between copies of the model into the target network
        (0: no target network).
    :param eps_training: probability of a random action during training collection.
    :param eps_inference: probability of a random action outside training.
    """

    target_update_freq: int = 0
    eps_training: float = 0.0
    eps_inference: float = 0.0


@dataclass(kw_only=True)
class DQNParams(QLearningOffPolicyParams):
    """Parameters of :class:`~tianshou.algorithm.DQN`.

    :param is_double: Double DQN: the online network selects the target's action.
    :param huber_loss_delta: Huber loss with this threshold instead of the squared error
        (None: squared error).
    """

    is_double: bool = True
    huber_loss_delta: float | None = None


@dataclass(kw_only=True)
class IQNParams(QLearningOffPolicyParams):
    """Parameters of :class:`~tianshou.algorithm.IQN`, including its network's head (read by the
    algorithm factory; not among the keyword arguments of :meth:`create_kwargs`).

    :param sample_size: quantile fractions drawn when acting.
    :param online_sample_size: fractions drawn for the online network in the update.
    :param target_sample_size: fractions drawn for the target network in the update.
    :param num_quantiles: kept for the procedural signature (IQN samples its fractions).
    :param hidden_sizes: hidden layers of the quantile network's head.
    :param num_cosines: cosine basis functions embedding the fractions.
    """

    sample_size: int = 32
    online_sample_size: int = 8
    target_sample_size: int = 8
    num_quantiles: int = 200
    hidden_sizes: Sequence[int] = ()
    num_cosines: int = 64

    def _get_param_transformers(self) -> list[ParamTransformer]:
        return [
            *super()._get_param_transformers(),
            ParamTransformerDrop("hidden_sizes", "num_cosines"),
        ]


@dataclass(kw_only=True)
class DDPGParams(
    Params,
    ParamsMixinGamma,
    ParamsMixinActorAndCritic,
    ParamsMixinExplorationNoise,
    ParamsMixinActionScalingAndBounding,
    ParamsMixinNStepReturnHorizon,
    ParamsMixinTau,
):
    """Parameters of :class:`~tianshou.algorithm.DDPG`; without an ``exploration_noise`` the
    policy collects without noise (pass e.g. ``MaxActionScaledGaussian(0.1)`` or ``"default"``).
    """


@dataclass(kw_only=True)
class REDQParams(DDPGParams, ParamsMixinDeterministicEval, ParamsMixinAlpha):
    """Parameters of :class:`~tianshou.algorithm.REDQ` (the critic is an ensemble).

    :param ensemble_size: number of critics in the ensemble.
    :param subset_size: critics drawn per target computation.
    :param actor_delay: critic updates per actor update.
    :param target_mode: combine the drawn critics' targets by ``"min"`` or ``"mean"``.
    """

    ensemble_size: int = 10
    subset_size: int = 2
    actor_delay: int = 20
    target_mode: Literal["mean", "min"] = "min"


@dataclass(kw_only=True)
class TD3Params(
    Params,
    ParamsMixinGamma,
    ParamsMixinActorAndDualCritics,
    ParamsMixinExplorationNoise,
    ParamsMixinActionScalingAndBounding,
    ParamsMixinNStepReturnHorizon,
    ParamsMixinTau,
):
    """Parameters of :class:`~tianshou.algorithm.TD3`; without an ``exploration_noise`` the
    policy collects without noise (pass e.g. ``MaxActionScaledGaussian(0.1)`` or ``"default"``).

    :param policy_noise: standard deviation of the target policy smoothing noise: a float or a
        :class:`FloatEnvValueFactory` (e.g. ``MaxActionScaled(0.2)``).
    :param noise_clip: bound on the smoothing noise: a float or a :class:`FloatEnvValueFactory`.
    :param update_actor_freq: critic updates per actor update.
    """

    policy_noise: float | FloatEnvValueFactory = 0.2
    noise_clip: float | FloatEnvValueFactory = 0.5
    update_actor_freq: int = 2

    def _get_param_transformers(self) -> list[ParamTransformer]:
        return [
            *super()._get_param_transformers(),
            ParamTransformerFloatEnvParamFactory("policy_noise"),
            ParamTransformerFloatEnvParamFactory("noise_clip"),
        ]


@dataclass(kw_only=True)
class _SACParams(
    Params,
    ParamsMixinGamma,
    ParamsMixinActorAndDualCritics,
    ParamsMixinNStepReturnHorizon,
    ParamsMixinTau,
    ParamsMixinDeterministicEval,
    ParamsMixinAlpha,
):
    """Parameters shared by SAC and DiscreteSAC (stochastic evaluation unless
    ``deterministic_eval=True``)."""


@dataclass(kw_only=True)
class SACParams(_SACParams, ParamsMixinExplorationNoise, ParamsMixinActionScaling):
    """Parameters of :class:`~tianshou.algorithm.SAC`."""


@dataclass(kw_only=True)
class DiscreteSACParams(_SACParams):
    """Parameters of :class:`~tianshou.algorithm.DiscreteSAC`."""
