"""Tests of the algorithm factories: they build exactly the procedural objects, with the params'
values arriving in them, collectors sized by the training config, and trainers that train.
"""

import pickle
from typing import Any

import numpy as np
import pytest
import torch
from torch import nn

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
    DiscreteSAC,
    Reinforce,
)
from tianshou.algorithm.modelbased.icm import ICMOffPolicyWrapper
from tianshou.algorithm.modelfree.ddpg import ContinuousDeterministicPolicy
from tianshou.algorithm.modelfree.discrete_sac import DiscreteSACPolicy
from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
from tianshou.algorithm.modelfree.iqn import IQNPolicy
from tianshou.algorithm.modelfree.redq import REDQPolicy
from tianshou.algorithm.modelfree.reinforce import ProbabilisticActorPolicy
from tianshou.algorithm.modelfree.sac import AutoAlpha, SACPolicy
from tianshou.data import Collector, ReplayBuffer, VectorReplayBuffer
from tianshou.exploration import GaussianNoise
from tianshou.highlevel.algorithm import (
    CHECKPOINT_DICT_KEY_MODEL,
    CHECKPOINT_DICT_KEY_OBS_RMS,
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
from tianshou.highlevel.config import OffPolicyTrainingConfig, OnPolicyTrainingConfig
from tianshou.highlevel.env import EnvFactoryRegistered, Environments, VectorEnvType
from tianshou.highlevel.module.actor import (
    ActorFactoryDefault,
    ActorFactoryTransientStorageDecorator,
    ActorFuture,
    ContinuousActorType,
)
from tianshou.highlevel.module.core import ModuleFactory, TDevice
from tianshou.highlevel.module.critic import (
    CriticEnsembleFactoryDefault,
    CriticFactoryDefault,
    CriticFactoryReuseActor,
)
from tianshou.highlevel.module.intermediate import IntermediateModule, IntermediateModuleFactory
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
from tianshou.highlevel.params.algorithm_wrapper import AlgorithmWrapperFactoryIntrinsicCuriosity
from tianshou.highlevel.params.alpha import AutoAlphaFactoryDefault
from tianshou.highlevel.params.collector import CollectorFactoryDefault
from tianshou.highlevel.params.optim import OptimizerFactoryFactoryAdam
from tianshou.highlevel.persistence import PolicyPersistence
from tianshou.highlevel.trainer import (
    EpochStopCallback,
    EpochTrainCallbackDQNSetEps,
    TrainerCallbacks,
    TrainingContext,
)
from tianshou.highlevel.world import World
from tianshou.trainer import OffPolicyTrainer, OnPolicyTrainer
from tianshou.utils.logger import LazyLogger
from tianshou.utils.net.common import Net
from tianshou.utils.net.continuous import ContinuousCritic
from tianshou.utils.net.discrete import DiscreteActor, DiscreteCritic, ImplicitQuantileNetwork

HIDDEN = (8,)
ADAM = OptimizerFactoryFactoryAdam()


def on_policy_config(**kwargs: Any) -> OnPolicyTrainingConfig:
    defaults: dict[str, Any] = {
        "max_epochs": 1,
        "epoch_num_steps": 100,
        "num_training_envs": 2,
        "num_test_envs": 2,
        "buffer_size": 100,
        "collection_step_num_env_steps": 50,
        "batch_size": 32,
    }
    return OnPolicyTrainingConfig(**(defaults | kwargs))


def off_policy_config(**kwargs: Any) -> OffPolicyTrainingConfig:
    defaults: dict[str, Any] = {
        "max_epochs": 1,
        "epoch_num_steps": 100,
        "num_training_envs": 2,
        "num_test_envs": 2,
        "buffer_size": 500,
        "collection_step_num_env_steps": 10,
        "batch_size": 16,
    }
    return OffPolicyTrainingConfig(**(defaults | kwargs))


def gaussian_actor() -> ActorFactoryDefault:
    return ActorFactoryDefault(ContinuousActorType.GAUSSIAN, hidden_sizes=HIDDEN)


def deterministic_actor() -> ActorFactoryDefault:
    return ActorFactoryDefault(ContinuousActorType.DETERMINISTIC, hidden_sizes=HIDDEN)


def critic() -> CriticFactoryDefault:
    return CriticFactoryDefault(hidden_sizes=HIDDEN)


class QNetFactory(ModuleFactory):
    """A small MLP with one output per action (a DQN model)."""

    def create_module(self, envs: Environments, device: TDevice) -> nn.Module:
        return Net(
            state_shape=envs.get_observation_shape(),
            action_shape=envs.get_action_shape(),
            hidden_sizes=HIDDEN,
        ).to(device)


class BodyFactory(IntermediateModuleFactory):
    """A small MLP body (an IQN preprocess net or an ICM feature net)."""

    def create_intermediate_module(self, envs: Environments, device: TDevice) -> IntermediateModule:
        net = Net(state_shape=envs.get_observation_shape(), hidden_sizes=HIDDEN).to(device)
        return IntermediateModule(net, net.output_dim)


def lrs(optimizer: Any) -> list[float]:
    return [group["lr"] for group in optimizer.torch_optimizer.param_groups]


def optimized_params(optimizer: Any) -> list[torch.Tensor]:
    return [p for group in optimizer.torch_optimizer.param_groups for p in group["params"]]


def make_world(
    factory: AlgorithmFactory, envs: Environments, persist_directory: str
) -> tuple[Any, World]:
    algorithm = factory.create_algorithm(envs, "cpu")
    training_collector, test_collector = factory.create_train_test_collectors(algorithm, envs)
    world = World(
        envs=envs,
        algorithm=algorithm,
        training_collector=training_collector,
        test_collector=test_collector,
        logger=LazyLogger(),
        persist_directory=persist_directory,
        restore_directory=None,
    )
    return algorithm, world


def test_checkpoint_keys() -> None:
    assert CHECKPOINT_DICT_KEY_MODEL == "model"
    assert CHECKPOINT_DICT_KEY_OBS_RMS == "obs_rms"


class TestOnPolicyFactories:
    def test_ppo_builds_ppo_with_params(self, pendulum: Environments) -> None:
        params = PPOParams(eps_clip=0.3, vf_coef=0.25, gae_lambda=0.9, deterministic_eval=True)
        factory = PPOAlgorithmFactory(params, on_policy_config(), gaussian_actor(), critic(), ADAM)
        algorithm = factory.create_algorithm(pendulum, "cpu")
        assert type(algorithm) is PPO
        assert type(algorithm.policy) is ProbabilisticActorPolicy
        assert isinstance(algorithm.critic, ContinuousCritic)
        assert (algorithm.eps_clip, algorithm.vf_coef, algorithm.gae_lambda) == (0.3, 0.25, 0.9)
        assert algorithm.policy.deterministic_eval
        assert algorithm.policy.action_scaling  # "default" resolves to True for Box actions
        # one optimizer over actor and critic
        trained = {id(p) for p in optimized_params(algorithm.optim)}
        expected = {id(p) for p in [*algorithm.policy.parameters(), *algorithm.critic.parameters()]}
        assert trained == expected

    def test_a2c_critic_reuses_actor_body_and_shared_params_are_optimized_once(
        self, cartpole: Environments
    ) -> None:
        future = ActorFuture()
        actor_factory = ActorFactoryTransientStorageDecorator(
            ActorFactoryDefault(ContinuousActorType.UNSUPPORTED, hidden_sizes=HIDDEN), future
        )
        factory = A2CAlgorithmFactory(
            A2CParams(ent_coef=0.05),
            on_policy_config(),
            actor_factory,
            CriticFactoryReuseActor(future),
            ADAM,
        )
        algorithm = factory.create_algorithm(cartpole, "cpu")
        assert type(algorithm) is A2C
        assert algorithm.ent_coef == 0.05
        actor = algorithm.policy.actor
        assert future.actor is actor
        assert isinstance(actor, DiscreteActor)
        assert isinstance(algorithm.critic, DiscreteCritic)
        assert algorithm.critic.preprocess is actor.get_preprocess_net()
        trained = optimized_params(algorithm.optim)
        assert len(trained) == len({id(p) for p in trained})

    @pytest.mark.parametrize(
        ("factory_class", "params", "algorithm_class", "attribute", "value"),
        [
            (NPGAlgorithmFactory, NPGParams(trust_region_size=0.2), NPG, "trust_region_size", 0.2),
            (TRPOAlgorithmFactory, TRPOParams(max_kl=0.05), TRPO, "max_kl", 0.05),
        ],
    )
    def test_natural_gradient_factories(
        self,
        pendulum: Environments,
        factory_class: Any,
        params: Any,
        algorithm_class: type,
        attribute: str,
        value: float,
    ) -> None:
        factory = factory_class(params, on_policy_config(), gaussian_actor(), critic(), ADAM)
        algorithm = factory.create_algorithm(pendulum, "cpu")
        assert type(algorithm) is algorithm_class
        assert getattr(algorithm, attribute) == value

    def test_reinforce_with_discrete_actor(self, cartpole: Environments) -> None:
        factory = ReinforceAlgorithmFactory(
            ReinforceParams(gamma=0.9, lr=0.01),
            on_policy_config(),
            ActorFactoryDefault(ContinuousActorType.UNSUPPORTED, hidden_sizes=HIDDEN),
            ADAM,
        )
        algorithm = factory.create_algorithm(cartpole, "cpu")
        assert type(algorithm) is Reinforce
        assert type(algorithm.policy) is ProbabilisticActorPolicy
        assert algorithm.gamma == 0.9
        assert lrs(algorithm.optim) == [0.01]

    def test_deterministic_actor_is_rejected(self, pendulum: Environments) -> None:
        factory = PPOAlgorithmFactory(
            PPOParams(), on_policy_config(), deterministic_actor(), critic(), ADAM
        )
        with pytest.raises(ValueError, match="stochastic actor"):
            factory.create_algorithm(pendulum, "cpu")


class TestOffPolicyFactories:
    def test_dqn_builds_dqn_with_params(self, cartpole: Environments) -> None:
        params = DQNParams(target_update_freq=40, eps_training=0.3, n_step_return_horizon=3)
        factory = DQNAlgorithmFactory(params, off_policy_config(), QNetFactory(), ADAM)
        algorithm = factory.create_algorithm(cartpole, "cpu")
        assert type(algorithm) is DQN
        assert type(algorithm.policy) is DiscreteQLearningPolicy
        assert isinstance(algorithm.policy.model, Net)
        assert algorithm.target_update_freq == 40
        assert algorithm.n_step_return_horizon == 3
        assert algorithm.policy.eps_training == 0.3

    def test_dqn_rejects_continuous_envs(self, pendulum: Environments) -> None:
        factory = DQNAlgorithmFactory(DQNParams(), off_policy_config(), QNetFactory(), ADAM)
        with pytest.raises(AssertionError, match="requires discrete environments"):
            factory.create_algorithm(pendulum, "cpu")

    def test_iqn_builds_iqn_on_an_implicit_quantile_network(self, cartpole: Environments) -> None:
        model_factory = ImplicitQuantileNetworkFactory(BodyFactory(), num_cosines=16)
        params = IQNParams(sample_size=16, num_quantiles=50)
        factory = IQNAlgorithmFactory(params, off_policy_config(), model_factory, ADAM)
        algorithm = factory.create_algorithm(cartpole, "cpu")
        assert type(algorithm) is IQN
        assert type(algorithm.policy) is IQNPolicy
        assert isinstance(algorithm.policy.model, ImplicitQuantileNetwork)
        assert algorithm.policy.sample_size == 16

    def test_ddpg_builds_ddpg_with_noise_and_tau(self, pendulum: Environments) -> None:
        factory = DDPGAlgorithmFactory(
            DDPGParams(tau=0.01, exploration_noise="default"),
            off_policy_config(),
            deterministic_actor(),
            critic(),
            ADAM,
        )
        algorithm = factory.create_algorithm(pendulum, "cpu")
        assert type(algorithm) is DDPG
        assert type(algorithm.policy) is ContinuousDeterministicPolicy
        assert algorithm.tau == 0.01
        noise = algorithm.policy.exploration_noise
        assert isinstance(noise, GaussianNoise)
        assert noise._sigma == pytest.approx(0.1)  # "default": the policy's own default

    def test_td3_builds_twin_critics(self, pendulum: Environments) -> None:
        factory = TD3AlgorithmFactory(
            TD3Params(update_actor_freq=3),
            off_policy_config(),
            deterministic_actor(),
            critic(),
            critic(),
            ADAM,
        )
        algorithm = factory.create_algorithm(pendulum, "cpu")
        assert type(algorithm) is TD3
        assert type(algorithm.policy) is ContinuousDeterministicPolicy
        assert algorithm.update_actor_freq == 3
        assert isinstance(algorithm.policy_noise, float)
        assert isinstance(algorithm.noise_clip, float)
        assert algorithm.critic is not algorithm.critic2
        # the critics take actions: Q(s, a)
        obs, act = torch.zeros(4, 3), torch.zeros(4, 1)
        assert algorithm.critic(obs, act).shape == (4, 1)

    def test_sac_with_auto_alpha(self, pendulum: Environments) -> None:
        params = SACParams(alpha=AutoAlphaFactoryDefault(lr=0.002), deterministic_eval=False)
        factory = SACAlgorithmFactory(
            params, off_policy_config(), gaussian_actor(), critic(), critic(), ADAM
        )
        algorithm = factory.create_algorithm(pendulum, "cpu")
        assert type(algorithm) is SAC
        assert type(algorithm.policy) is SACPolicy
        assert isinstance(algorithm.alpha, AutoAlpha)
        assert algorithm.alpha.optim.torch_optimizer.param_groups[0]["lr"] == 0.002
        assert algorithm.alpha.target_entropy == pytest.approx(-1.0)
        assert not algorithm.policy.deterministic_eval

    def test_sac_with_fixed_alpha(self, pendulum: Environments) -> None:
        factory = SACAlgorithmFactory(
            SACParams(alpha=0.1), off_policy_config(), gaussian_actor(), critic(), critic(), ADAM
        )
        algorithm = factory.create_algorithm(pendulum, "cpu")
        assert type(algorithm) is SAC
        assert algorithm.alpha.value == pytest.approx(0.1)

    def test_discrete_sac_critics_output_one_value_per_action(self, cartpole: Environments) -> None:
        factory = DiscreteSACAlgorithmFactory(
            DiscreteSACParams(alpha=0.05),
            off_policy_config(),
            ActorFactoryDefault(ContinuousActorType.UNSUPPORTED, hidden_sizes=HIDDEN),
            critic(),
            critic(),
            ADAM,
        )
        algorithm = factory.create_algorithm(cartpole, "cpu")
        assert type(algorithm) is DiscreteSAC
        assert type(algorithm.policy) is DiscreteSACPolicy
        assert algorithm.critic(torch.zeros(5, 4)).shape == (5, 2)
        assert algorithm.critic2(torch.zeros(5, 4)).shape == (5, 2)

    def test_redq_builds_critic_ensemble(self, pendulum: Environments) -> None:
        params = REDQParams(ensemble_size=4, subset_size=2, actor_delay=5)
        factory = REDQAlgorithmFactory(
            params,
            off_policy_config(),
            gaussian_actor(),
            CriticEnsembleFactoryDefault(hidden_sizes=HIDDEN),
            ADAM,
        )
        algorithm = factory.create_algorithm(pendulum, "cpu")
        assert type(algorithm) is REDQ
        assert type(algorithm.policy) is REDQPolicy
        assert (algorithm.ensemble_size, algorithm.actor_delay) == (4, 5)
        assert algorithm.critic(torch.zeros(3, 3), torch.zeros(3, 1)).shape == (4, 3, 1)

    def test_algorithm_wrapper_is_applied_last(self, cartpole: Environments, tmp_path: Any) -> None:
        factory = DQNAlgorithmFactory(DQNParams(), off_policy_config(), QNetFactory(), ADAM)
        factory.set_policy_wrapper_factory(
            AlgorithmWrapperFactoryIntrinsicCuriosity(
                feature_net_factory=BodyFactory(),
                hidden_sizes=HIDDEN,
                lr=1e-3,
                lr_scale=1.0,
                reward_scale=0.1,
                forward_loss_weight=0.2,
            )
        )
        algorithm, world = make_world(factory, cartpole, str(tmp_path))
        assert type(algorithm) is ICMOffPolicyWrapper
        assert type(algorithm.wrapped_algorithm) is DQN
        assert factory.create_trainer(world, PolicyPersistence()).algorithm is algorithm


class TestCollectors:
    def test_off_policy_collectors(self, cartpole: Environments) -> None:
        config = off_policy_config(
            buffer_size=300, replay_buffer_stack_num=2, replay_buffer_ignore_obs_next=True
        )
        factory = DQNAlgorithmFactory(DQNParams(), config, QNetFactory(), ADAM)
        algorithm = factory.create_algorithm(cartpole, "cpu")
        training, test = factory.create_train_test_collectors(algorithm, cartpole)
        assert type(training) is Collector and type(test) is Collector
        assert training.policy is algorithm.policy and test.policy is algorithm.policy
        assert training.exploration_noise and not test.exploration_noise
        buffer = training.buffer
        assert type(buffer) is VectorReplayBuffer
        assert (buffer.maxsize, buffer.buffer_num) == (300, 2)
        assert buffer.buffers[0].options["stack_num"] == 2
        assert buffer.buffers[0].options["ignore_obs_next"]
        assert len(buffer) == 0  # no warm-up configured

    def test_single_env_gets_a_plain_buffer_and_on_policy_no_noise(self) -> None:
        envs = EnvFactoryRegistered(task="CartPole-v1", venv_type=VectorEnvType.DUMMY).create_envs(
            num_training_envs=1, num_test_envs=1, seed=0
        )
        factory = A2CAlgorithmFactory(
            A2CParams(),
            on_policy_config(num_training_envs=1, buffer_size=64),
            ActorFactoryDefault(ContinuousActorType.UNSUPPORTED, hidden_sizes=HIDDEN),
            critic(),
            ADAM,
        )
        training, _ = factory.create_train_test_collectors(
            factory.create_algorithm(envs, "cpu"), envs
        )
        assert type(training.buffer) is ReplayBuffer
        assert training.buffer.maxsize == 64
        assert not training.exploration_noise

    @pytest.mark.parametrize("random", [True, False])
    def test_warm_up_steps_are_collected_after_reset(
        self, pendulum: Environments, random: bool
    ) -> None:
        config = off_policy_config(start_timesteps=40, start_timesteps_random=random)
        factory = DDPGAlgorithmFactory(DDPGParams(), config, deterministic_actor(), critic(), ADAM)
        algorithm = factory.create_algorithm(pendulum, "cpu")
        training, _ = factory.create_train_test_collectors(algorithm, pendulum)
        assert len(training.buffer) == 40
        untouched, _ = factory.create_train_test_collectors(
            algorithm, pendulum, reset_collectors=False
        )
        assert len(untouched.buffer) == 0

    def test_collector_factory_is_used(self, cartpole: Environments) -> None:
        calls: list[bool] = []

        class RecordingCollectorFactory(CollectorFactoryDefault):
            def create_collector(self, *args: Any, **kwargs: Any) -> Collector:
                calls.append(True)
                return super().create_collector(*args, **kwargs)

        factory = DQNAlgorithmFactory(DQNParams(), off_policy_config(), QNetFactory(), ADAM)
        factory.set_collector_factory(RecordingCollectorFactory())
        factory.create_train_test_collectors(factory.create_algorithm(cartpole, "cpu"), cartpole)
        assert len(calls) == 2


class StopAtOnce(EpochStopCallback):
    def __init__(self) -> None:
        self.contexts: list[TrainingContext] = []

    def should_stop(self, mean_rewards: float, context: TrainingContext) -> bool:
        self.contexts.append(context)
        return False


class TestTrainers:
    def test_on_policy_trainer_runs_an_epoch(self, cartpole: Environments, tmp_path: Any) -> None:
        config = on_policy_config(epoch_num_steps=200, update_step_num_repetitions=2)
        factory = PPOAlgorithmFactory(
            PPOParams(),
            config,
            ActorFactoryDefault(ContinuousActorType.UNSUPPORTED, hidden_sizes=HIDDEN),
            critic(),
            ADAM,
        )
        stop = StopAtOnce()
        factory.set_trainer_callbacks(TrainerCallbacks(epoch_stop_callback=stop))
        algorithm, world = make_world(factory, cartpole, str(tmp_path))
        trainer = factory.create_trainer(world, PolicyPersistence())
        assert type(trainer) is OnPolicyTrainer
        assert trainer.algorithm is algorithm
        params = trainer.params
        assert (params.max_epochs, params.epoch_num_steps) == (1, 200)
        assert (params.collection_step_num_env_steps, params.batch_size) == (50, 32)
        assert params.update_step_num_repetitions == 2
        assert params.logger is world.logger
        world.trainer = trainer
        result = trainer.run()
        assert result.timing.total_time > 0
        assert result.train_step >= 200
        assert stop.contexts and stop.contexts[0].algorithm is algorithm
        assert (tmp_path / "policy_state_dict.pt").exists()  # save_best_fn ran

    def test_off_policy_trainer_runs_an_epoch(self, cartpole: Environments, tmp_path: Any) -> None:
        config = off_policy_config(
            epoch_num_steps=100, update_step_num_gradient_steps_per_sample=0.5, start_timesteps=32
        )
        factory = DQNAlgorithmFactory(DQNParams(), config, QNetFactory(), ADAM)
        factory.set_trainer_callbacks(
            TrainerCallbacks(epoch_train_callback=EpochTrainCallbackDQNSetEps(0.25))
        )
        algorithm, world = make_world(factory, cartpole, str(tmp_path))
        trainer = factory.create_trainer(world, PolicyPersistence(enabled=False))
        assert type(trainer) is OffPolicyTrainer
        params = trainer.params
        assert params.update_step_num_gradient_steps_per_sample == 0.5
        assert (params.batch_size, params.collection_step_num_env_steps) == (16, 10)
        assert params.save_best_fn is None
        before = [p.detach().clone() for p in algorithm.policy.parameters()]
        result = trainer.run()
        assert result.train_step >= 100
        assert algorithm.policy.eps_training == 0.25
        after = list(algorithm.policy.parameters())
        assert any(not torch.equal(b, a) for b, a in zip(before, after, strict=True))
        assert np.isfinite(result.best_reward)

    @pytest.mark.parametrize(("configured", "expected"), [(-1, 2), (5, 5)])
    def test_test_step_episodes_default_to_one_per_test_env(
        self,
        cartpole: Environments,
        pendulum: Environments,
        tmp_path: Any,
        configured: int,
        expected: int,
    ) -> None:
        config = off_policy_config(num_test_envs=2, test_step_num_episodes=configured)
        factory = DQNAlgorithmFactory(DQNParams(), config, QNetFactory(), ADAM)
        _, world = make_world(factory, cartpole, str(tmp_path))
        trainer = factory.create_trainer(world, PolicyPersistence(enabled=False))
        assert trainer.params.test_step_num_episodes == expected
        on_policy = on_policy_config(num_test_envs=2, test_step_num_episodes=configured)
        ppo_factory = PPOAlgorithmFactory(PPOParams(), on_policy, gaussian_actor(), critic(), ADAM)
        _, ppo_world = make_world(ppo_factory, pendulum, str(tmp_path))
        ppo_trainer = ppo_factory.create_trainer(ppo_world, PolicyPersistence(enabled=False))
        assert ppo_trainer.params.test_step_num_episodes == expected

    def test_create_trainer_needs_a_training_collector(
        self, cartpole: Environments, tmp_path: Any
    ) -> None:
        factory = DQNAlgorithmFactory(DQNParams(), off_policy_config(), QNetFactory(), ADAM)
        algorithm = factory.create_algorithm(cartpole, "cpu")
        world = World(
            envs=cartpole,
            algorithm=algorithm,
            logger=LazyLogger(),
            persist_directory=str(tmp_path),
            restore_directory=None,
        )
        with pytest.raises(ValueError, match="no training collector"):
            factory.create_trainer(world, PolicyPersistence(enabled=False))

    def test_factory_pickles_without_the_algorithm_it_created(self, cartpole: Environments) -> None:
        factory = DQNAlgorithmFactory(
            DQNParams(target_update_freq=7), off_policy_config(), QNetFactory(), ADAM
        )
        factory.create_algorithm(cartpole, "cpu")
        copy = pickle.loads(pickle.dumps(factory))
        assert copy._algorithm is None
        assert copy.params.target_update_freq == 7
        assert factory._algorithm is not None
        assert "DQNParams" in str(factory)

    def test_create_trainer_needs_the_factorys_algorithm(
        self, cartpole: Environments, tmp_path: Any
    ) -> None:
        factory = DQNAlgorithmFactory(DQNParams(), off_policy_config(), QNetFactory(), ADAM)
        other = DQNAlgorithmFactory(DQNParams(), off_policy_config(), QNetFactory(), ADAM)
        _, world = make_world(other, cartpole, str(tmp_path))
        with pytest.raises(ValueError, match="call create_algorithm"):
            factory.create_trainer(world, PolicyPersistence())
        factory.create_algorithm(cartpole, "cpu")
        with pytest.raises(ValueError, match="does not collect with the policy"):
            factory.create_trainer(world, PolicyPersistence())
