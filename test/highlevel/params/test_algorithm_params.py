"""Tests of the algorithm parameter objects and their transformers.

The central check: for every ``<Algo>Params`` class, :meth:`Params.create_kwargs` on real
environments yields keyword arguments that the procedural Policy and Algorithm constructors
accept, every key landing in one of them, and the objects they build carry the values given.
"""

import inspect
import math
from collections.abc import Callable
from typing import Any

import pytest
import torch
from torch import nn
from torch.distributions import Categorical

from tianshou.algorithm import (
    A2C,
    DDPG,
    DQN,
    IQN,
    NPG,
    PPO,
    REDQ,
    SAC,
    TD3,
    TRPO,
    Algorithm,
    DiscreteSAC,
    Policy,
    Reinforce,
)
from tianshou.algorithm.modelfree.ddpg import ContinuousDeterministicPolicy
from tianshou.algorithm.modelfree.discrete_sac import DiscreteSACPolicy
from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
from tianshou.algorithm.modelfree.iqn import IQNPolicy
from tianshou.algorithm.modelfree.redq import REDQPolicy
from tianshou.algorithm.modelfree.reinforce import ProbabilisticActorPolicy
from tianshou.algorithm.modelfree.sac import AutoAlpha, SACPolicy
from tianshou.algorithm.optim import (
    AdamOptimizerFactory,
    LRSchedulerFactoryLinear,
    RMSpropOptimizerFactory,
)
from tianshou.exploration import GaussianNoise
from tianshou.highlevel.config import OnPolicyTrainingConfig
from tianshou.highlevel.env import Environments
from tianshou.highlevel.module.critic import CriticEnsembleFactoryContinuousNet
from tianshou.highlevel.params.algorithm_params import (
    A2CParams,
    DDPGParams,
    DiscreteSACParams,
    DQNParams,
    IQNParams,
    NPGParams,
    Params,
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
    PPOParams,
    REDQParams,
    ReinforceParams,
    SACParams,
    TD3Params,
    TRPOParams,
)
from tianshou.highlevel.params.alpha import AutoAlphaFactoryDefault
from tianshou.highlevel.params.dist_fn import (
    DistributionFunctionFactoryCategorical,
    DistributionFunctionFactoryIndependentGaussians,
)
from tianshou.highlevel.params.env_param import MaxActionScaled
from tianshou.highlevel.params.lr_scheduler import LRSchedulerFactoryFactoryLinear
from tianshou.highlevel.params.noise import MaxActionScaledGaussian
from tianshou.highlevel.params.optim import (
    OptimizerFactoryFactoryAdam,
    OptimizerFactoryFactoryRMSprop,
)
from tianshou.utils.net.common import Net
from tianshou.utils.net.continuous import (
    ContinuousActorDeterministic,
    ContinuousActorProbabilistic,
    ContinuousCritic,
)
from tianshou.utils.net.discrete import DiscreteActor, DiscreteCritic, ImplicitQuantileNetwork

HIDDEN = [16]


def data_for(envs: Environments) -> ParamTransformerData:
    return ParamTransformerData(
        envs=envs, device="cpu", optim_factory_default=OptimizerFactoryFactoryAdam()
    )


def body(envs: Environments, with_action: bool = False) -> Net:
    if with_action:
        return Net(
            state_shape=envs.get_observation_shape(),
            action_shape=envs.get_action_shape(),
            hidden_sizes=HIDDEN,
            concat=True,
        )
    return Net(state_shape=envs.get_observation_shape(), hidden_sizes=HIDDEN)


def stochastic_actor(envs: Environments) -> tuple[nn.Module, Callable]:
    actor: nn.Module
    if envs.get_type().is_discrete():
        actor = DiscreteActor(preprocess_net=body(envs), action_shape=envs.get_action_shape())
        return actor, DistributionFunctionFactoryCategorical().create_dist_fn(envs)
    actor = ContinuousActorProbabilistic(
        preprocess_net=body(envs), action_shape=envs.get_action_shape(), unbounded=True
    )
    return actor, DistributionFunctionFactoryIndependentGaussians().create_dist_fn(envs)


def q_critic(envs: Environments) -> nn.Module:
    if envs.get_type().is_discrete():
        return DiscreteCritic(preprocess_net=body(envs), last_size=envs.get_action_shape())  # type: ignore[arg-type]
    return ContinuousCritic(preprocess_net=body(envs, with_action=True))


def split(
    kwargs: dict[str, Any], policy_class: type[Policy], algorithm_class: type[Algorithm]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split kwargs by the constructors' keywords; a key both take goes to both."""
    policy_keys = set(inspect.signature(policy_class).parameters)
    algorithm_keys = set(inspect.signature(algorithm_class).parameters)
    unknown = set(kwargs) - policy_keys - algorithm_keys
    assert not unknown, f"not constructor keywords of {policy_class} or {algorithm_class}"
    return (
        {k: v for k, v in kwargs.items() if k in policy_keys},
        {k: v for k, v in kwargs.items() if k in algorithm_keys},
    )


def build(params: Params, envs: Environments) -> Algorithm:
    """Build the procedural policy and algorithm from ``params.create_kwargs``."""
    kwargs = params.create_kwargs(data_for(envs))
    space = envs.get_action_space()
    match params:
        case ReinforceParams() | A2CParams() | NPGParams():
            actor, dist_fn = stochastic_actor(envs)
            algorithm_class = _algo_class(params)
            policy_kw, algo_kw = split(kwargs, ProbabilisticActorPolicy, algorithm_class)
            policy: Policy = ProbabilisticActorPolicy(
                actor=actor, dist_fn=dist_fn, action_space=space, **policy_kw
            )
            if algorithm_class is Reinforce:
                return Reinforce(policy=policy, **algo_kw)  # type: ignore[arg-type]
            critic = DiscreteCritic(preprocess_net=body(envs))
            return algorithm_class(policy=policy, critic=critic, **algo_kw)
        case DQNParams():
            policy_kw, algo_kw = split(kwargs, DiscreteQLearningPolicy, DQN)
            model = Net(
                state_shape=envs.get_observation_shape(),
                action_shape=envs.get_action_shape(),
                hidden_sizes=HIDDEN,
            )
            policy = DiscreteQLearningPolicy(model=model, action_space=space, **policy_kw)
            return DQN(policy=policy, **algo_kw)
        case IQNParams():
            policy_kw, algo_kw = split(kwargs, IQNPolicy, IQN)
            iqn_model = ImplicitQuantileNetwork(
                preprocess_net=body(envs),
                action_shape=envs.get_action_shape(),
                hidden_sizes=params.hidden_sizes,
                num_cosines=params.num_cosines,
            )
            policy = IQNPolicy(model=iqn_model, action_space=space, **policy_kw)
            return IQN(policy=policy, **algo_kw)
        case REDQParams():
            policy_kw, algo_kw = split(kwargs, REDQPolicy, REDQ)
            actor, _ = stochastic_actor(envs)
            policy = REDQPolicy(actor=actor, action_space=space, **policy_kw)
            ensemble = CriticEnsembleFactoryContinuousNet(HIDDEN).create_module(
                envs, "cpu", params.ensemble_size, use_action=True
            )
            return REDQ(policy=policy, critic=ensemble, **algo_kw)
        case DDPGParams() | TD3Params():
            algorithm_class = DDPG if isinstance(params, DDPGParams) else TD3
            policy_kw, algo_kw = split(kwargs, ContinuousDeterministicPolicy, algorithm_class)
            actor = ContinuousActorDeterministic(
                preprocess_net=body(envs), action_shape=envs.get_action_shape()
            )
            policy = ContinuousDeterministicPolicy(actor=actor, action_space=space, **policy_kw)
            if algorithm_class is TD3:
                algo_kw["critic2"] = q_critic(envs)
            return algorithm_class(policy=policy, critic=q_critic(envs), **algo_kw)
        case SACParams():
            policy_kw, algo_kw = split(kwargs, SACPolicy, SAC)
            actor, _ = stochastic_actor(envs)
            policy = SACPolicy(actor=actor, action_space=space, **policy_kw)
            return SAC(policy=policy, critic=q_critic(envs), critic2=q_critic(envs), **algo_kw)
        case DiscreteSACParams():
            policy_kw, algo_kw = split(kwargs, DiscreteSACPolicy, DiscreteSAC)
            actor = DiscreteActor(
                preprocess_net=body(envs), action_shape=envs.get_action_shape(), softmax_output=True
            )
            policy = DiscreteSACPolicy(actor=actor, action_space=space, **policy_kw)
            return DiscreteSAC(
                policy=policy, critic=q_critic(envs), critic2=q_critic(envs), **algo_kw
            )
    raise AssertionError(f"no builder for {params}")


def _algo_class(params: Params) -> type:
    for params_class, algorithm_class in (
        (PPOParams, PPO),
        (A2CParams, A2C),
        (TRPOParams, TRPO),
        (NPGParams, NPG),
        (ReinforceParams, Reinforce),
    ):
        if isinstance(params, params_class):
            return algorithm_class
    raise AssertionError(params)


CONTINUOUS_CASES: list[Params] = [
    ReinforceParams(),
    A2CParams(),
    PPOParams(),
    NPGParams(),
    TRPOParams(),
    DDPGParams(),
    TD3Params(),
    SACParams(),
    REDQParams(),
]
DISCRETE_CASES: list[Params] = [
    ReinforceParams(),
    A2CParams(),
    PPOParams(),
    NPGParams(),
    TRPOParams(),
    DQNParams(),
    IQNParams(),
    DiscreteSACParams(),
]


@pytest.mark.parametrize("params", CONTINUOUS_CASES, ids=lambda p: type(p).__name__)
def test_defaults_build_the_procedural_objects_continuous(
    params: Params, pendulum: Environments
) -> None:
    algorithm = build(params, pendulum)
    assert isinstance(algorithm, Algorithm)
    assert algorithm.policy.action_scaling  # "default" on a Box space


@pytest.mark.parametrize("params", DISCRETE_CASES, ids=lambda p: type(p).__name__)
def test_defaults_build_the_procedural_objects_discrete(
    params: Params, cartpole: Environments
) -> None:
    assert isinstance(build(params, cartpole), Algorithm)


def field_defaults(params_class: type[Params]) -> dict[str, Any]:
    return {
        name: value
        for name, value in vars(params_class()).items()
        if not name.endswith(("lr", "lr_scheduler", "optim"))
    }


PUBLISHED_HIGH_LEVEL_DEFAULTS: dict[str, Any] = {
    "exploration_noise": None,
    "deterministic_eval": False,
}
"""Defaults of the high-level parameters that the published library sets independently of the
procedural constructors' (no noise, stochastic evaluation)."""


@pytest.mark.parametrize(
    "params_class",
    [DDPGParams, TD3Params, SACParams, REDQParams, DiscreteSACParams, PPOParams, ReinforceParams],
)
def test_published_high_level_defaults(params_class: type[Params]) -> None:
    defaults = field_defaults(params_class)
    pinned = {name: defaults[name] for name in PUBLISHED_HIGH_LEVEL_DEFAULTS if name in defaults}
    assert pinned
    assert pinned == {name: PUBLISHED_HIGH_LEVEL_DEFAULTS[name] for name in pinned}


@pytest.mark.parametrize(
    ("params_class", "constructors"),
    [
        (ReinforceParams, [ProbabilisticActorPolicy, Reinforce]),
        (A2CParams, [ProbabilisticActorPolicy, A2C]),
        (PPOParams, [ProbabilisticActorPolicy, PPO]),
        (NPGParams, [ProbabilisticActorPolicy, NPG]),
        (TRPOParams, [ProbabilisticActorPolicy, TRPO]),
        (DQNParams, [DiscreteQLearningPolicy, DQN]),
        (IQNParams, [IQNPolicy, IQN]),
        (DDPGParams, [ContinuousDeterministicPolicy, DDPG]),
        (TD3Params, [ContinuousDeterministicPolicy, TD3]),
        (SACParams, [SACPolicy, SAC]),
        (DiscreteSACParams, [DiscreteSACPolicy, DiscreteSAC]),
        (REDQParams, [REDQPolicy, REDQ]),
    ],
)
def test_defaults_are_the_procedural_defaults(
    params_class: type[Params], constructors: list[type]
) -> None:
    procedural: dict[str, Any] = {}
    for constructor in constructors:
        for name, parameter in inspect.signature(constructor).parameters.items():
            if parameter.default is not inspect.Parameter.empty:
                procedural.setdefault(name, parameter.default)
    for name, default in field_defaults(params_class).items():
        if name in ("action_scaling", "hidden_sizes", "num_cosines"):
            continue  # resolved from the envs / read by the factory
        assert name in procedural, f"{params_class.__name__}.{name} is no constructor keyword"
        if name in PUBLISHED_HIGH_LEVEL_DEFAULTS:
            continue  # pinned by test_published_high_level_defaults
        assert default == procedural[name], name


def test_optimizer_fields_become_optimizer_factories(pendulum: Environments) -> None:
    config = OnPolicyTrainingConfig(
        max_epochs=2, epoch_num_steps=100, collection_step_num_env_steps=10, num_training_envs=1
    )
    kwargs = PPOParams(
        lr=3e-4,
        optim=OptimizerFactoryFactoryRMSprop(eps=1e-5),
        lr_scheduler=LRSchedulerFactoryFactoryLinear(config),
    ).create_kwargs(data_for(pendulum))
    assert not {"lr", "lr_scheduler"} & set(kwargs)
    optim = kwargs["optim"]
    assert isinstance(optim, RMSpropOptimizerFactory)
    assert (optim.lr, optim.eps) == (3e-4, 1e-5)
    assert isinstance(optim.lr_scheduler_factory, LRSchedulerFactoryLinear)
    assert optim.lr_scheduler_factory.num_scheduler_steps == 20

    td3 = TD3Params(actor_lr=1e-4, critic1_lr=2e-4, critic2_lr=3e-4).create_kwargs(
        data_for(pendulum)
    )
    lrs = [td3[key].lr for key in ("policy_optim", "critic_optim", "critic2_optim")]
    assert lrs == [1e-4, 2e-4, 3e-4]
    assert all(isinstance(td3[key], AdamOptimizerFactory) for key in ("policy_optim",))
    assert td3["critic_optim"].lr_scheduler_factory is None
    ddpg = DDPGParams(actor_lr=1e-4, critic_lr=2e-3).create_kwargs(data_for(pendulum))
    assert (ddpg["policy_optim"].lr, ddpg["critic_optim"].lr) == (1e-4, 2e-3)
    assert not {"actor_lr", "critic_lr", "actor_optim", "critic_lr_scheduler"} & set(ddpg)


def test_default_optimizer_comes_from_the_data(cartpole: Environments) -> None:
    data = ParamTransformerData(
        envs=cartpole, device="cpu", optim_factory_default=OptimizerFactoryFactoryRMSprop()
    )
    assert isinstance(DQNParams(lr=0.01).create_kwargs(data)["optim"], RMSpropOptimizerFactory)


def test_env_dependent_values_are_resolved(pendulum: Environments) -> None:
    kwargs = TD3Params(
        noise_clip=MaxActionScaled(0.5),
        policy_noise=MaxActionScaled(0.2),
        exploration_noise=MaxActionScaledGaussian(0.1),
    ).create_kwargs(data_for(pendulum))
    assert (kwargs["noise_clip"], kwargs["policy_noise"]) == (1.0, pytest.approx(0.4))
    assert isinstance(kwargs["exploration_noise"], GaussianNoise)
    assert kwargs["exploration_noise"]._sigma == pytest.approx(0.2)
    # "default" reaches the policy, which resolves it as the procedural API does
    default_noise = DDPGParams(exploration_noise="default")
    assert default_noise.create_kwargs(data_for(pendulum))["exploration_noise"] == "default"
    ddpg_policy = build(default_noise, pendulum).policy
    assert isinstance(ddpg_policy.exploration_noise, GaussianNoise)
    assert ddpg_policy.exploration_noise._sigma == pytest.approx(0.1)
    # without noise configured, none is added (the published default)
    assert build(DDPGParams(), pendulum).policy.exploration_noise is None
    assert build(TD3Params(), pendulum).policy.exploration_noise is None
    assert SACParams().create_kwargs(data_for(pendulum))["exploration_noise"] is None
    assert TD3Params(noise_clip=1).create_kwargs(data_for(pendulum))["noise_clip"] == 1.0


def test_alpha_is_resolved(pendulum: Environments, cartpole: Environments) -> None:
    sac = build(SACParams(alpha=AutoAlphaFactoryDefault(lr=3e-4)), pendulum)
    assert isinstance(sac, SAC) and isinstance(sac.alpha, AutoAlpha)
    assert sac.alpha.target_entropy == -1.0
    discrete = build(DiscreteSACParams(alpha=AutoAlphaFactoryDefault()), cartpole)
    assert isinstance(discrete, DiscreteSAC) and isinstance(discrete.alpha, AutoAlpha)
    assert discrete.alpha.target_entropy == pytest.approx(-math.log(2))
    assert REDQParams(alpha=0.1).create_kwargs(data_for(pendulum))["alpha"] == 0.1


def test_action_scaling_follows_the_action_space(
    pendulum: Environments, cartpole: Environments
) -> None:
    assert PPOParams().create_kwargs(data_for(pendulum))["action_scaling"] is True
    assert PPOParams().create_kwargs(data_for(cartpole))["action_scaling"] is False
    assert (
        PPOParams(action_scaling=False).create_kwargs(data_for(pendulum))["action_scaling"] is False
    )


def test_iqn_network_fields_are_not_constructor_kwargs(cartpole: Environments) -> None:
    params = IQNParams(hidden_sizes=[8], num_cosines=16, sample_size=4)
    kwargs = params.create_kwargs(data_for(cartpole))
    assert not {"hidden_sizes", "num_cosines"} & set(kwargs)
    assert kwargs["sample_size"] == 4
    assert params.hidden_sizes == [8]  # the parameter object itself is unchanged


@pytest.mark.parametrize(
    ("params", "error", "match"),
    [
        (PPOParams(action_scaling="yes"), ValueError, "action_scaling"),  # type: ignore[arg-type]
        (DDPGParams(exploration_noise=0.1), TypeError, "exploration_noise"),  # type: ignore[arg-type]
        (SACParams(alpha="auto"), TypeError, "alpha"),  # type: ignore[arg-type]
        (TD3Params(noise_clip="0.5"), TypeError, "noise_clip"),  # type: ignore[arg-type]
        (PPOParams(optim=AdamOptimizerFactory()), TypeError, "OptimizerFactoryFactory"),  # type: ignore[arg-type]
        (PPOParams(lr_scheduler=object()), TypeError, "LRSchedulerFactoryFactory"),  # type: ignore[arg-type]
    ],
)
def test_invalid_values_are_named(
    params: Params, error: type[Exception], match: str, pendulum: Environments
) -> None:
    with pytest.raises(error, match=match):
        params.create_kwargs(data_for(pendulum))


def test_env_dependent_values_need_continuous_envs(cartpole: Environments) -> None:
    with pytest.raises(TypeError, match="continuous environments"):
        TD3Params(policy_noise=MaxActionScaled(0.2)).create_kwargs(data_for(cartpole))
    with pytest.raises(TypeError, match="continuous environments"):
        DDPGParams(exploration_noise=MaxActionScaledGaussian(0.1)).create_kwargs(data_for(cartpole))


def test_published_examples_construct(pendulum: Environments, cartpole: Environments) -> None:
    training_config = OnPolicyTrainingConfig(num_training_envs=1)
    published = [
        PPOParams(
            gamma=0.99,
            gae_lambda=0.95,
            action_bound_method="clip",
            return_scaling=True,
            ent_coef=0.0,
            vf_coef=0.25,
            max_grad_norm=0.5,
            value_clip=False,
            advantage_normalization=False,
            eps_clip=0.2,
            dual_clip=None,
            recompute_advantage=True,
            lr=3e-4,
            lr_scheduler=LRSchedulerFactoryFactoryLinear(training_config),
        ),
        A2CParams(gamma=0.99, optim=OptimizerFactoryFactoryRMSprop(eps=1e-5, alpha=0.99), lr=7e-4),
        SACParams(
            tau=0.005,
            gamma=0.99,
            alpha=AutoAlphaFactoryDefault(lr=3e-4),
            n_step_return_horizon=1,
            actor_lr=1e-3,
            critic1_lr=1e-3,
            critic2_lr=1e-3,
        ),
        TD3Params(
            tau=0.005,
            gamma=0.99,
            n_step_return_horizon=1,
            update_actor_freq=2,
            noise_clip=MaxActionScaled(0.5),
            policy_noise=MaxActionScaled(0.2),
            exploration_noise=MaxActionScaledGaussian(0.1),
            actor_lr=3e-4,
            critic1_lr=3e-4,
            critic2_lr=3e-4,
        ),
        DDPGParams(
            actor_lr=1e-3,
            critic_lr=1e-3,
            gamma=0.99,
            tau=0.005,
            exploration_noise=MaxActionScaledGaussian(0.1),
            n_step_return_horizon=1,
        ),
        REDQParams(
            actor_lr=1e-3,
            critic_lr=1e-3,
            gamma=0.99,
            tau=0.005,
            alpha=AutoAlphaFactoryDefault(lr=3e-4),
            n_step_return_horizon=1,
            target_mode="min",
            subset_size=2,
            ensemble_size=4,
        ),
        NPGParams(
            gamma=0.99,
            gae_lambda=0.95,
            action_bound_method="clip",
            return_scaling=True,
            advantage_normalization=True,
            optim_critic_iters=20,
            trust_region_size=0.1,
            lr=1e-3,
            lr_scheduler=LRSchedulerFactoryFactoryLinear(training_config),
        ),
        TRPOParams(
            gamma=0.99,
            gae_lambda=0.95,
            action_bound_method="clip",
            return_scaling=True,
            advantage_normalization=True,
            optim_critic_iters=20,
            max_kl=0.01,
            backtrack_coeff=0.8,
            max_backtracks=10,
            lr=1e-3,
        ),
    ]
    for params in published:
        assert isinstance(build(params, pendulum), Algorithm)
    dqn = build(
        DQNParams(
            lr=1e-3,
            gamma=0.9,
            n_step_return_horizon=3,
            target_update_freq=320,
            eps_training=0.3,
            eps_inference=0.0,
        ),
        cartpole,
    )
    assert isinstance(dqn, DQN)
    assert (dqn.gamma, dqn.n_step_return_horizon, dqn.target_update_freq) == (0.9, 3, 320)
    assert (dqn.policy.eps_training, dqn.policy.eps_inference) == (0.3, 0.0)


def test_params_print_their_fields() -> None:
    text = str(DQNParams(gamma=0.9))
    assert text.startswith("DQNParams[") and "gamma=0.9" in text


class TestTransformers:
    def data(self, envs: Environments) -> ParamTransformerData:
        return data_for(envs)

    def test_get_reads_drops_and_defaults(self) -> None:
        d = {"a": 1, "b": None}
        assert ParamTransformer.get(d, "a") == 1
        assert ParamTransformer.get(d, "b", default_factory=lambda: 5) == 5
        assert ParamTransformer.get(d, "c", default_factory=lambda: 7) == 7
        assert ParamTransformer.get(d, "a", drop=True) == 1
        assert d == {"b": None}
        with pytest.raises(KeyError, match="'c' is missing"):
            ParamTransformer.get(d, "c")

    def test_drop_and_rename(self, cartpole: Environments) -> None:
        d: dict[str, Any] = {"a": 1, "b": 2, "c": 3}
        ParamTransformerDrop("a", "b").transform(d, self.data(cartpole))
        assert d == {"c": 3}
        ParamTransformerRename({"c": "z"}).transform(d, self.data(cartpole))
        assert d == {"z": 3}

    def test_change_value(self, cartpole: Environments) -> None:
        class Double(ParamTransformerChangeValue):
            def change_value(self, value: Any, data: ParamTransformerData) -> Any:
                return 2 * value

        d = {"x": 4}
        Double("x").transform(d, self.data(cartpole))
        assert d == {"x": 8}

    def test_optim_factory(self, cartpole: Environments) -> None:
        d: dict[str, Any] = {"o": OptimizerFactoryFactoryRMSprop(), "l": 0.5, "s": None}
        ParamTransformerOptimFactory("o", "l", "s", "out").transform(d, self.data(cartpole))
        assert list(d) == ["out"]
        assert isinstance(d["out"], RMSpropOptimizerFactory) and d["out"].lr == 0.5

    def test_value_resolvers(self, pendulum: Environments) -> None:
        data = self.data(pendulum)
        d: dict[str, Any] = {
            "alpha": AutoAlphaFactoryDefault(),
            "noise": None,
            "clip": MaxActionScaled(0.5),
            "scaling": "default",
        }
        ParamTransformerAutoAlpha("alpha").transform(d, data)
        ParamTransformerNoiseFactory("noise").transform(d, data)
        ParamTransformerFloatEnvParamFactory("clip").transform(d, data)
        ParamTransformerActionScaling("scaling").transform(d, data)
        assert isinstance(d["alpha"], AutoAlpha)
        assert d["noise"] is None
        assert (d["clip"], d["scaling"]) == (1.0, True)


def test_policy_kwargs_reach_the_policy(cartpole: Environments) -> None:
    algorithm = build(PPOParams(deterministic_eval=True), cartpole)
    policy = algorithm.policy
    assert isinstance(policy, ProbabilisticActorPolicy)
    assert policy.deterministic_eval
    assert isinstance(policy.dist_fn(torch.tensor([[0.5, 0.5]])), Categorical)  # type: ignore[arg-type]
