"""Tests of structured spaces across algorithms: dict observations (every algorithm updates on
them; DQN, PPO and QRDQN learn a dict task), MultiDiscrete / MultiBinary / Tuple actions for
the policy-gradient family through product distributions, and hybrid ``Tuple(Discrete, Box)``
actions for PPO.

Each learning test uses a small env of our own whose reward depends on the structure: the goal
is only in its own observation key, every action part is rewarded separately, and the
continuous parameter of a hybrid action only pays off with the right discrete choice. The envs
raise on any action outside their space, so a wrongly mapped action fails the test.
"""

import functools
from collections.abc import Callable
from dataclasses import fields, is_dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch.distributions import Independent, Normal

from tianshou.algorithm import (
    A2C,
    BCQ,
    BDQN,
    C51,
    CQL,
    DDPG,
    DQN,
    FQF,
    GAIL,
    IQN,
    NPG,
    PPO,
    QRDQN,
    REDQ,
    SAC,
    TD3,
    TD3BC,
    TRPO,
    DiscreteBCQ,
    DiscreteCQL,
    DiscreteCRR,
    DiscreteSAC,
    OffPolicyImitationLearning,
    RainbowDQN,
    Reinforce,
)
from tianshou.algorithm.algorithm_base import Algorithm, OfflineAlgorithm, OnPolicyAlgorithm
from tianshou.algorithm.imitation.bcq import BCQPolicy
from tianshou.algorithm.imitation.discrete_bcq import DiscreteBCQPolicy
from tianshou.algorithm.imitation.imitation_base import ImitationPolicy
from tianshou.algorithm.modelfree.bdqn import BDQNPolicy
from tianshou.algorithm.modelfree.c51 import C51Policy
from tianshou.algorithm.modelfree.ddpg import ContinuousDeterministicPolicy
from tianshou.algorithm.modelfree.discrete_sac import DiscreteSACPolicy
from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
from tianshou.algorithm.modelfree.fqf import FQFPolicy
from tianshou.algorithm.modelfree.iqn import IQNPolicy
from tianshou.algorithm.modelfree.qrdqn import QRDQNPolicy
from tianshou.algorithm.modelfree.redq import REDQPolicy
from tianshou.algorithm.modelfree.reinforce import DiscreteActorPolicy, ProbabilisticActorPolicy
from tianshou.algorithm.modelfree.sac import SACPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import Batch, Collector, ReplayBuffer, VectorReplayBuffer
from tianshou.data.stats import SequenceSummaryStats
from tianshou.env import DummyVectorEnv
from tianshou.spaces.product_distributions import actor_output_dim, product_dist_fn
from tianshou.trainer import OffPolicyTrainerParams, OnPolicyTrainerParams
from tianshou.utils.net.branching import BranchingNet
from tianshou.utils.net.common import EnsembleLinear, Net, get_dict_state_decorator
from tianshou.utils.net.continuous import ContinuousActorDeterministic, ContinuousActorProbabilistic
from tianshou.utils.net.dict_encoder import DictActionCritic, DictEncoder
from tianshou.utils.net.dict_heads import DictHeadNet, DictPerturbation, DictVAE
from tianshou.utils.net.discrete import (
    DiscreteActor,
    DiscreteCritic,
    FractionProposalNetwork,
    FullQuantileFunction,
    ImplicitQuantileNetwork,
    NoisyLinear,
)
from tianshou.utils.torch_utils import policy_within_training_step


class StrictEnv(gym.Env):
    """An env that raises on any action outside its action space."""

    def _check(self, action: Any) -> None:
        if not self.action_space.contains(action):
            raise ValueError(f"action {action!r} is not in {self.action_space}")


# ---------------------------------------------------------------------- the test envs
class GoalLineEnv(StrictEnv):
    """Walk left or right along a line of 5 cells from the middle to the goal end.

    The goal end is drawn per episode and given only in the ``goal`` key, so a policy that
    ignores that key reaches it half of the time (reaching the other end costs -1).
    """

    def __init__(self) -> None:
        self.observation_space = gym.spaces.Dict(
            {"position": gym.spaces.Box(-1.0, 1.0, (1,)), "goal": gym.spaces.Discrete(2)}
        )
        self.action_space = gym.spaces.Discrete(2)
        self._position = 0
        self._goal = 0
        self._steps = 0

    def _observe(self) -> dict[str, Any]:
        return {"position": np.array([self._position / 2], dtype=np.float32), "goal": self._goal}

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        super().reset(seed=seed)
        self._position, self._steps = 0, 0
        self._goal = int(self.np_random.integers(2))
        return self._observe(), {}

    def step(self, action: int) -> tuple[dict, float, bool, bool, dict]:
        self._check(action)
        self._position += 1 if action == 1 else -1
        self._steps += 1
        reward = 0.0
        if abs(self._position) == 2:
            reached_goal = (self._position > 0) == (self._goal == 1)
            reward = 1.0 if reached_goal else -1.0
        return self._observe(), reward, abs(self._position) == 2, self._steps >= 8, {}


class MatchPartsEnv(StrictEnv):
    """Every step shows targets for each action part; each matched part earns 1/parts.

    :param action_space: a MultiDiscrete, MultiBinary or all-discrete Tuple space; the targets
        are one-hot encoded in the (flat) observation.
    """

    EPISODE_LENGTH = 5

    def __init__(self, action_space: gym.Space) -> None:
        self.action_space = action_space
        self._sizes = [int(n) for n in _part_sizes(action_space)]
        self.observation_space = gym.spaces.Box(0.0, 1.0, (sum(self._sizes),))
        self._targets = np.zeros(len(self._sizes), dtype=np.int64)
        self._steps = 0

    def _observe(self) -> np.ndarray:
        self._targets = np.array([self.np_random.integers(n) for n in self._sizes])
        return np.concatenate(
            [
                np.eye(n, dtype=np.float32)[t]
                for n, t in zip(self._sizes, self._targets, strict=True)
            ]
        )

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:
        super().reset(seed=seed)
        self._steps = 0
        return self._observe(), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        self._check(action)
        flat = np.asarray(action, dtype=np.int64).reshape(-1)
        reward = float(np.mean(flat == self._targets))
        self._steps += 1
        return self._observe(), reward, self._steps >= self.EPISODE_LENGTH, False, {}


def _part_sizes(space: gym.Space) -> list[int]:
    if isinstance(space, gym.spaces.MultiDiscrete):
        return list(space.nvec)
    if isinstance(space, gym.spaces.MultiBinary):
        return [2] * int(space.n)
    return [int(part.n) for part in space.spaces]  # type: ignore[attr-defined]


class HybridTargetEnv(StrictEnv):
    """A discrete choice plus its continuous parameter: choose the shown option and set the
    parameter to the shown value; the reward ``1 - |parameter - value|`` is paid only for the
    right option."""

    EPISODE_LENGTH = 5

    def __init__(self) -> None:
        self.action_space = gym.spaces.Tuple(
            (gym.spaces.Discrete(2), gym.spaces.Box(-1.0, 1.0, (1,), dtype=np.float32))
        )
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (3,))
        self._option = 0
        self._value = 0.0
        self._steps = 0

    def _observe(self) -> np.ndarray:
        self._option = int(self.np_random.integers(2))
        self._value = float(self.np_random.choice([-0.5, 0.5]))
        obs = np.zeros(3, dtype=np.float32)
        obs[self._option] = 1.0
        obs[2] = self._value
        return obs

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:
        super().reset(seed=seed)
        self._steps = 0
        return self._observe(), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        self._check(action)
        option, parameter = action
        reward = 0.0
        if option == self._option:
            reward = 1.0 - abs(float(parameter[0]) - self._value)
        self._steps += 1
        return self._observe(), reward, self._steps >= self.EPISODE_LENGTH, False, {}


def seed_everything(seed: int = 0) -> None:
    """Seed torch and numpy's global generator (minibatch order), so that a learning test's
    outcome does not depend on the tests run before it."""
    torch.manual_seed(seed)
    np.random.seed(seed)


def vector_env(make: Callable[[], gym.Env], num: int, seed: int) -> DummyVectorEnv:
    envs = DummyVectorEnv([make for _ in range(num)])
    envs.seed(seed)
    return envs


def mean_test_return(algorithm: Algorithm, make: Callable[[], gym.Env]) -> float:
    """The mean return of 20 test episodes of the algorithm's policy, without exploration."""
    collector = Collector(algorithm, vector_env(make, 10, 1))
    collector.reset()
    return float(collector.collect(n_episode=20).returns.mean())


def on_policy_training(
    algorithm: Algorithm, make: Callable[[], gym.Env], threshold: float, max_epochs: int = 10
) -> None:
    algorithm.run_training(
        OnPolicyTrainerParams(
            training_collector=Collector(
                algorithm, vector_env(make, 4, 0), VectorReplayBuffer(400, 4)
            ),
            test_collector=Collector(algorithm, vector_env(make, 10, 2)),
            max_epochs=max_epochs,
            epoch_num_steps=400,
            collection_step_num_env_steps=200,
            update_step_num_repetitions=4,
            batch_size=64,
            test_step_num_episodes=20,
            stop_fn=lambda mean_return: mean_return >= threshold,
            show_progress=False,
            verbose=False,
        )
    )


def off_policy_training(
    algorithm: Algorithm, make: Callable[[], gym.Env], threshold: float
) -> None:
    """Train after 200 random warm-up steps, until the mean test return reaches ``threshold``
    or for 10 epochs."""
    training = Collector(
        algorithm,
        vector_env(make, 4, 0),
        VectorReplayBuffer(2000, 4),
        exploration_noise=True,
    )
    training.reset()
    training.collect(n_step=200, random=True)
    algorithm.run_training(
        OffPolicyTrainerParams(
            training_collector=training,
            test_collector=Collector(algorithm, vector_env(make, 10, 2)),
            max_epochs=10,
            epoch_num_steps=400,
            collection_step_num_env_steps=20,
            test_step_num_episodes=20,
            batch_size=64,
            stop_fn=lambda mean_return: mean_return >= threshold,
            show_progress=False,
            verbose=False,
        )
    )


# ---------------------------------------------------------------------- dict observations
GOAL_SPACE = GoalLineEnv().observation_space
GOAL_THRESHOLD = 0.95


def goal_ppo() -> PPO:
    policy = DiscreteActorPolicy(
        actor=DiscreteActor(
            preprocess_net=DictEncoder(observation_space=GOAL_SPACE, hidden_sizes=[32]),
            action_shape=2,
            softmax_output=False,
        ),
        action_space=gym.spaces.Discrete(2),
        deterministic_eval=True,
    )
    return PPO(
        policy=policy,
        critic=DiscreteCritic(
            preprocess_net=DictEncoder(observation_space=GOAL_SPACE, hidden_sizes=[32])
        ),
        optim=AdamOptimizerFactory(lr=1e-2),
        gamma=0.9,
    )


@pytest.mark.usefixtures("one_thread")
def test_ppo_learns_a_dict_observation_task() -> None:
    seed_everything()
    algorithm = goal_ppo()
    assert mean_test_return(algorithm, GoalLineEnv) < GOAL_THRESHOLD - 0.5
    on_policy_training(algorithm, GoalLineEnv, GOAL_THRESHOLD)
    assert mean_test_return(algorithm, GoalLineEnv) >= GOAL_THRESHOLD


@pytest.mark.usefixtures("one_thread")
def test_dqn_learns_a_dict_observation_task() -> None:
    seed_everything()
    policy = DiscreteQLearningPolicy(
        model=DictEncoder(observation_space=GOAL_SPACE, action_shape=2, hidden_sizes=[32]),
        action_space=gym.spaces.Discrete(2),
        eps_training=0.2,
    )
    algorithm = DQN(
        policy=policy, optim=AdamOptimizerFactory(lr=1e-2), gamma=0.9, target_update_freq=20
    )
    assert mean_test_return(algorithm, GoalLineEnv) < GOAL_THRESHOLD - 0.5
    off_policy_training(algorithm, GoalLineEnv, GOAL_THRESHOLD)
    assert mean_test_return(algorithm, GoalLineEnv) >= GOAL_THRESHOLD


# ---------------------------------------------------------------------- structured action spaces
MULTI_DISCRETE = gym.spaces.MultiDiscrete([3, 4])
MULTI_BINARY = gym.spaces.MultiBinary(3)
DISCRETE_TUPLE = gym.spaces.Tuple((gym.spaces.Discrete(2), gym.spaces.Discrete(3)))
HYBRID = HybridTargetEnv().action_space


# ---------------------------------------------------------------------- structured actions
def parts_policy(space: gym.Space) -> DiscreteActorPolicy:
    """A policy over an all-discrete structured space; the actor outputs the flat logits."""
    obs_dim = MatchPartsEnv(space).observation_space.shape[0]
    return DiscreteActorPolicy(
        actor=DiscreteActor(
            preprocess_net=Net(state_shape=obs_dim, hidden_sizes=[32]),
            action_shape=actor_output_dim(space),
            softmax_output=False,
        ),
        action_space=space,
        deterministic_eval=True,
    )


def parts_critic(space: gym.Space) -> DiscreteCritic:
    obs_dim = MatchPartsEnv(space).observation_space.shape[0]
    return DiscreteCritic(preprocess_net=Net(state_shape=obs_dim, hidden_sizes=[32]))


PARTS_THRESHOLD = 0.95 * MatchPartsEnv.EPISODE_LENGTH


@pytest.mark.usefixtures("one_thread")
def test_ppo_learns_a_multi_discrete_task() -> None:
    seed_everything()
    algorithm = PPO(
        policy=parts_policy(MULTI_DISCRETE),
        critic=parts_critic(MULTI_DISCRETE),
        optim=AdamOptimizerFactory(lr=1e-2),
        gamma=0.5,
    )

    def make() -> gym.Env:
        return MatchPartsEnv(MULTI_DISCRETE)

    assert mean_test_return(algorithm, make) < PARTS_THRESHOLD - 1
    on_policy_training(algorithm, make, PARTS_THRESHOLD)
    assert mean_test_return(algorithm, make) >= PARTS_THRESHOLD


def build_on_policy(name: str, space: gym.Space) -> Algorithm:
    policy = parts_policy(space)
    optim = AdamOptimizerFactory(lr=1e-2)
    if name == "Reinforce":
        return Reinforce(policy=policy, optim=optim)
    critic = parts_critic(space)
    if name == "A2C":
        return A2C(policy=policy, critic=critic, optim=optim)
    if name == "NPG":
        return NPG(policy=policy, critic=critic, optim=optim)
    return TRPO(policy=policy, critic=critic, optim=optim)


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("name", ["Reinforce", "A2C", "NPG", "TRPO"])
@pytest.mark.parametrize("space", [MULTI_DISCRETE, MULTI_BINARY, DISCRETE_TUPLE])
def test_policy_gradient_updates_improve_structured_actions(name: str, space: gym.Space) -> None:
    """A few updates on collected data raise the return of a structured-action task: the
    envs accept every action (they raise otherwise) and every part's log-probability is
    trained."""
    seed_everything()
    algorithm = build_on_policy(name, space)

    def make() -> gym.Env:
        return MatchPartsEnv(space)

    before = mean_test_return(algorithm, make)
    on_policy_training(algorithm, make, threshold=np.inf, max_epochs=2)
    assert mean_test_return(algorithm, make) > before + 0.5


HYBRID_THRESHOLD = 0.85 * HybridTargetEnv.EPISODE_LENGTH


@pytest.mark.usefixtures("one_thread")
def test_ppo_learns_a_hybrid_action_task() -> None:
    seed_everything()
    policy = ProbabilisticActorPolicy(
        actor=Net(state_shape=3, action_shape=actor_output_dim(HYBRID), hidden_sizes=[32]),
        dist_fn=product_dist_fn(HYBRID),
        action_space=HYBRID,
        deterministic_eval=True,
    )
    algorithm = PPO(
        policy=policy,
        critic=DiscreteCritic(preprocess_net=Net(state_shape=3, hidden_sizes=[32])),
        optim=AdamOptimizerFactory(lr=1e-2),
        gamma=0.5,
    )
    assert mean_test_return(algorithm, HybridTargetEnv) < HYBRID_THRESHOLD - 1
    on_policy_training(algorithm, HybridTargetEnv, HYBRID_THRESHOLD)
    assert mean_test_return(algorithm, HybridTargetEnv) >= HYBRID_THRESHOLD


# ---------------------------------------------------------------------- every algorithm
class DictSensorsEnv(StrictEnv):
    """Dict observations with a float, a Discrete and an image entry; every action costs its
    squared size (continuous actions by default).

    :param action_space: the action space; Box, Discrete or MultiDiscrete.
    """

    def __init__(self, action_space: gym.Space | None = None) -> None:
        self.observation_space = gym.spaces.Dict(
            {
                "joints": gym.spaces.Box(-1.0, 1.0, (3,)),
                "mode": gym.spaces.Discrete(3),
                "camera": gym.spaces.Box(0, 255, (8, 8, 3), dtype=np.uint8),
            }
        )
        self.action_space = action_space or gym.spaces.Box(-1.0, 1.0, (2,), dtype=np.float32)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:
        super().reset(seed=seed)
        self.observation_space.seed(int(self.np_random.integers(2**31)))
        return self.observation_space.sample(), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        if isinstance(self.action_space, gym.spaces.Box):
            action = np.asarray(action, dtype=np.float32)
        self._check(action)
        reward = -float(np.sum(np.square(np.asarray(action, dtype=np.float32))))
        return (
            self.observation_space.sample(),
            reward,
            False,
            bool(self.np_random.random() < 0.2),
            {},
        )


SENSORS_SPACE = DictSensorsEnv().observation_space
SENSORS_ACTIONS = DictSensorsEnv().action_space


def sensors_body() -> DictEncoder:
    return DictEncoder(observation_space=SENSORS_SPACE, hidden_sizes=[16], cnn_channels=[4])


def sensors_q() -> DictActionCritic:
    return DictActionCritic(
        observation_space=SENSORS_SPACE, action_shape=2, hidden_sizes=[16], cnn_channels=[4]
    )


SENSORS_DISCRETE = gym.spaces.Discrete(3)
SENSORS_BRANCHES = gym.spaces.MultiDiscrete([3, 3])
NUM_ATOMS = 8


def sensors_distributional(**head_kwargs: Any) -> DictHeadNet:
    """Per-action return distributions (or quantiles) for the sensors env's discrete actions:
    a distributional Net head on a DictEncoder body with a CNN for the camera."""
    body = sensors_body()
    head = Net(state_shape=body.output_dim, action_shape=3, num_atoms=NUM_ATOMS, **head_kwargs)
    return DictHeadNet(encoder=body, head=head)


def sensors_expert_buffer(size: int = 40) -> ReplayBuffer:
    """Transitions of an expert of the sensors env: it always acts 0, the costless action."""
    env = DictSensorsEnv()
    buffer = ReplayBuffer(size)
    obs, _ = env.reset(seed=3)
    for _ in range(size):
        act = np.zeros(2, dtype=np.float32)
        obs_next, rew, terminated, truncated, _ = env.step(act)
        buffer.add(
            Batch(
                obs=obs,
                act=act,
                rew=rew,
                terminated=terminated,
                truncated=truncated,
                obs_next=obs_next,
                info={},
            )
        )
        obs = env.reset()[0] if terminated or truncated else obs_next
    return buffer


def goal_body(action_shape: int = 0) -> DictEncoder:
    return DictEncoder(observation_space=GOAL_SPACE, action_shape=action_shape, hidden_sizes=[16])


def gaussian(loc_scale: tuple[torch.Tensor, torch.Tensor]) -> torch.distributions.Distribution:
    return Independent(Normal(*loc_scale), 1)


def dict_obs_algorithm(name: str) -> Algorithm:
    optim = AdamOptimizerFactory(lr=1e-3)
    discrete = gym.spaces.Discrete(2)
    if name == "DQN":
        return DQN(
            policy=DiscreteQLearningPolicy(model=goal_body(2), action_space=discrete),
            optim=optim,
        )
    if name == "IQN":
        model = ImplicitQuantileNetwork(preprocess_net=goal_body(), action_shape=2)
        return IQN(policy=IQNPolicy(model=model, action_space=discrete), optim=optim)
    if name == "DiscreteSAC":
        policy = DiscreteSACPolicy(
            actor=DiscreteActor(preprocess_net=goal_body(), action_shape=2, softmax_output=False),
            action_space=discrete,
        )
        return DiscreteSAC(
            policy=policy,
            policy_optim=optim,
            critic=DiscreteCritic(preprocess_net=goal_body(), last_size=2),
            critic_optim=optim,
        )
    if name == "C51":
        decorator, flat_dim = get_dict_state_decorator(
            {"position": 1, "goal": ()}, ["position", "goal"]
        )
        c51_model = decorator(Net)(
            state_shape=flat_dim, action_shape=2, hidden_sizes=[16], num_atoms=11, softmax=True
        )
        return C51(
            policy=C51Policy(model=c51_model, action_space=discrete, num_atoms=11), optim=optim
        )
    if name == "QRDQN":
        qr_policy = QRDQNPolicy(model=sensors_distributional(), action_space=SENSORS_DISCRETE)
        return QRDQN(policy=qr_policy, optim=optim, num_quantiles=NUM_ATOMS, target_update_freq=2)
    if name == "DiscreteCQL":
        qr_policy = QRDQNPolicy(model=sensors_distributional(), action_space=SENSORS_DISCRETE)
        return DiscreteCQL(policy=qr_policy, optim=optim, num_quantiles=NUM_ATOMS)
    if name == "C51-image":
        model = sensors_distributional(softmax=True)
        return C51(
            policy=C51Policy(model=model, action_space=SENSORS_DISCRETE, num_atoms=NUM_ATOMS),
            optim=optim,
            target_update_freq=2,
        )
    if name == "RainbowDQN":
        noisy: dict[str, Any] = {"linear_layer": NoisyLinear}
        model = sensors_distributional(softmax=True, dueling_param=(noisy, noisy), **noisy)
        return RainbowDQN(
            policy=C51Policy(model=model, action_space=SENSORS_DISCRETE, num_atoms=NUM_ATOMS),
            optim=optim,
            n_step_return_horizon=2,
            target_update_freq=2,
        )
    if name == "BDQN":
        body = sensors_body()
        branching = BranchingNet(state_shape=body.output_dim, num_branches=2, action_per_branch=3)
        return BDQN(
            policy=BDQNPolicy(
                model=DictHeadNet(encoder=body, head=branching), action_space=SENSORS_BRANCHES
            ),
            optim=optim,
            target_update_freq=2,
        )
    if name == "FQF":
        fqf_model = FullQuantileFunction(preprocess_net=goal_body(), action_shape=2, num_cosines=8)
        fraction_model = FractionProposalNetwork(num_fractions=8, embedding_dim=16)
        return FQF(
            policy=FQFPolicy(model=fqf_model, fraction_model=fraction_model, action_space=discrete),
            optim=optim,
            fraction_optim=optim,
            num_fractions=8,
        )
    if name == "DiscreteBCQ":
        imitator = DiscreteActor(preprocess_net=goal_body(), action_shape=2, softmax_output=False)
        bcq_policy = DiscreteBCQPolicy(model=goal_body(2), imitator=imitator, action_space=discrete)
        return DiscreteBCQ(policy=bcq_policy, optim=optim)
    if name == "DiscreteCRR":
        crr_actor = DiscreteActor(preprocess_net=goal_body(), action_shape=2, softmax_output=False)
        return DiscreteCRR(
            policy=DiscreteActorPolicy(actor=crr_actor, action_space=discrete),
            critic=DiscreteCritic(preprocess_net=goal_body(), last_size=2),
            optim=optim,
        )
    if name == "OffPolicyImitationLearning":
        return OffPolicyImitationLearning(
            policy=ImitationPolicy(actor=goal_body(2), action_space=discrete), optim=optim
        )
    if name in ("Reinforce", "A2C", "PPO", "NPG", "TRPO"):
        actor = DiscreteActor(preprocess_net=goal_body(), action_shape=2, softmax_output=False)
        pg_policy = DiscreteActorPolicy(actor=actor, action_space=discrete)
        if name == "Reinforce":
            return Reinforce(policy=pg_policy, optim=optim)
        critic = DiscreteCritic(preprocess_net=goal_body())
        return {"A2C": A2C, "PPO": PPO, "NPG": NPG, "TRPO": TRPO}[name](
            policy=pg_policy, critic=critic, optim=optim
        )
    if name == "PPO-continuous":
        actor_prob = ContinuousActorProbabilistic(preprocess_net=sensors_body(), action_shape=2)
        return PPO(
            policy=ProbabilisticActorPolicy(
                actor=actor_prob, dist_fn=gaussian, action_space=SENSORS_ACTIONS
            ),
            critic=DiscreteCritic(preprocess_net=sensors_body()),
            optim=optim,
        )
    if name == "SAC":
        actor_prob = ContinuousActorProbabilistic(preprocess_net=sensors_body(), action_shape=2)
        return SAC(
            policy=SACPolicy(actor=actor_prob, action_space=SENSORS_ACTIONS),
            policy_optim=optim,
            critic=sensors_q(),
            critic_optim=optim,
            critic2=sensors_q(),
            critic2_optim=optim,
        )
    if name == "REDQ":
        ensemble = DictActionCritic(
            observation_space=SENSORS_SPACE,
            action_shape=2,
            hidden_sizes=[16],
            cnn_channels=[4],
            linear_layer=functools.partial(EnsembleLinear, 4),
        )
        actor_prob = ContinuousActorProbabilistic(preprocess_net=sensors_body(), action_shape=2)
        return REDQ(
            policy=REDQPolicy(actor=actor_prob, action_space=SENSORS_ACTIONS),
            policy_optim=optim,
            critic=ensemble,
            critic_optim=optim,
            ensemble_size=4,
            actor_delay=1,
        )
    if name == "CQL":
        actor_prob = ContinuousActorProbabilistic(preprocess_net=sensors_body(), action_shape=2)
        return CQL(
            policy=SACPolicy(actor=actor_prob, action_space=SENSORS_ACTIONS),
            policy_optim=optim,
            critic=sensors_q(),
            critic_optim=optim,
            num_repeat_actions=3,
        )
    if name == "BCQ":
        bcq_policy = BCQPolicy(
            actor_perturbation=DictPerturbation(
                observation_space=SENSORS_SPACE,
                action_shape=2,
                max_action=1.0,
                hidden_sizes=[16],
                cnn_channels=[4],
            ),
            action_space=SENSORS_ACTIONS,
            critic=sensors_q(),
            vae=DictVAE(
                observation_space=SENSORS_SPACE,
                action_shape=2,
                latent_dim=4,
                max_action=1.0,
                hidden_sizes=[16],
                cnn_channels=[4],
            ),
            forward_sampled_times=5,
        )
        return BCQ(
            policy=bcq_policy,
            actor_perturbation_optim=optim,
            critic_optim=optim,
            vae_optim=optim,
            num_sampled_action=3,
        )
    if name == "GAIL":
        actor_prob = ContinuousActorProbabilistic(preprocess_net=sensors_body(), action_shape=2)
        return GAIL(
            policy=ProbabilisticActorPolicy(
                actor=actor_prob, dist_fn=gaussian, action_space=SENSORS_ACTIONS
            ),
            critic=DiscreteCritic(preprocess_net=sensors_body()),
            optim=optim,
            expert_buffer=sensors_expert_buffer(),
            disc_net=sensors_q(),
            disc_optim=optim,
            disc_update_num=2,
        )
    deterministic = ContinuousActorDeterministic(preprocess_net=sensors_body(), action_shape=2)
    policy_det = ContinuousDeterministicPolicy(actor=deterministic, action_space=SENSORS_ACTIONS)
    if name == "DDPG":
        return DDPG(policy=policy_det, policy_optim=optim, critic=sensors_q(), critic_optim=optim)
    if name == "TD3BC":
        return TD3BC(
            policy=policy_det,
            policy_optim=optim,
            critic=sensors_q(),
            critic_optim=optim,
            critic2=sensors_q(),
            critic2_optim=optim,
            update_actor_freq=1,
        )
    return TD3(
        policy=policy_det,
        policy_optim=optim,
        critic=sensors_q(),
        critic_optim=optim,
        critic2=sensors_q(),
        critic2_optim=optim,
    )


DICT_OBS_ALGORITHMS = [
    "DQN",
    "C51",
    "IQN",
    "FQF",
    "DiscreteSAC",
    "DiscreteBCQ",
    "DiscreteCRR",
    "OffPolicyImitationLearning",
    "Reinforce",
    "A2C",
    "PPO",
    "NPG",
    "TRPO",
    "PPO-continuous",
    "SAC",
    "DDPG",
    "TD3",
    # networks with a DictEncoder body, the camera through its CNN
    "C51-image",
    "QRDQN",
    "RainbowDQN",
    "DiscreteCQL",
    "BDQN",
    "REDQ",
    "BCQ",
    "CQL",
    "TD3BC",
    "GAIL",
]


def dict_obs_env(algorithm: Algorithm) -> Callable[[], gym.Env]:
    """The env an algorithm of :func:`dict_obs_algorithm` trains on: the goal line for the
    networks on ``goal_body``, else the sensors env (with a camera) with the policy's actions."""
    action_space = algorithm.policy.action_space
    if action_space == gym.spaces.Discrete(2):
        return GoalLineEnv
    return functools.partial(DictSensorsEnv, action_space)


def loss_values(stats: Any) -> list[float]:
    """Every loss (or loss summary's mean) an update reports."""
    values = []
    for field in fields(stats):
        value = getattr(stats, field.name)
        if isinstance(value, SequenceSummaryStats):
            value = value.mean
        if "loss" in field.name and isinstance(value, float):
            values.append(value)
        elif is_dataclass(value):
            values += loss_values(value)
    return values


@pytest.mark.parametrize("name", DICT_OBS_ALGORITHMS)
def test_every_algorithm_trains_on_dict_observations(name: str) -> None:
    """One update on collected dict observations: finite losses, finite parameters that
    changed. For the offline algorithms the collected data stands in for a data set."""
    seed_everything()
    algorithm = dict_obs_algorithm(name)
    collector = Collector(
        algorithm, vector_env(dict_obs_env(algorithm), 2, 0), VectorReplayBuffer(200, 2)
    )
    collector.reset()
    collector.collect(n_step=40)
    assert isinstance(collector.buffer.obs, Batch) and len(collector.buffer.obs.get_keys()) > 1
    if isinstance(algorithm, OfflineAlgorithm):
        algorithm.process_buffer(collector.buffer)
    modules = [algorithm.policy, *([algorithm.disc_net] if isinstance(algorithm, GAIL) else [])]
    before = [[p.detach().clone() for p in module.parameters()] for module in modules]
    with policy_within_training_step(algorithm.policy):
        if isinstance(algorithm, OnPolicyAlgorithm):
            stats = algorithm.update(buffer=collector.buffer, batch_size=16, repeat=1)
        else:
            stats = algorithm.update(sample_size=16, buffer=collector.buffer)
    losses = loss_values(stats)
    assert losses and np.isfinite(losses).all()
    for module, module_before in zip(modules, before, strict=True):
        after = list(module.parameters())
        assert all(torch.isfinite(p).all() for p in after)
        assert any(not torch.equal(b, a) for b, a in zip(module_before, after, strict=True))


@pytest.mark.usefixtures("one_thread")
def test_qrdqn_learns_a_dict_observation_task() -> None:
    """A distributional learner on a DictHeadNet: quantiles of a Net head on a DictEncoder
    body reach the goal given only in the ``goal`` key (seed 1: its untrained network misses
    it, as the first assertion checks)."""
    seed_everything(1)
    body = DictEncoder(observation_space=GOAL_SPACE, hidden_sizes=[32])
    model = DictHeadNet(
        encoder=body, head=Net(state_shape=body.output_dim, action_shape=2, num_atoms=16)
    )
    policy = QRDQNPolicy(model=model, action_space=gym.spaces.Discrete(2), eps_training=0.2)
    algorithm = QRDQN(
        policy=policy,
        optim=AdamOptimizerFactory(lr=1e-2),
        gamma=0.9,
        num_quantiles=16,
        target_update_freq=20,
    )
    assert mean_test_return(algorithm, GoalLineEnv) < GOAL_THRESHOLD - 0.5
    off_policy_training(algorithm, GoalLineEnv, GOAL_THRESHOLD)
    assert mean_test_return(algorithm, GoalLineEnv) >= GOAL_THRESHOLD


# ---------------------------------------------------------------------- unsupported spaces
def test_dqn_with_a_multi_discrete_action_space_is_a_clear_error() -> None:
    with pytest.raises(
        ValueError, match=r"DiscreteQLearningPolicy needs a Discrete.*MultiDiscrete"
    ):
        DiscreteQLearningPolicy(model=goal_body(7), action_space=MULTI_DISCRETE)


def test_sac_with_a_tuple_action_space_is_a_clear_error() -> None:
    actor = ContinuousActorProbabilistic(preprocess_net=sensors_body(), action_shape=2)
    with pytest.raises(ValueError, match=r"SACPolicy needs a continuous \(Box\).*Tuple"):
        SACPolicy(actor=actor, action_space=HYBRID)


def test_hybrid_actions_need_the_probabilistic_policy() -> None:
    actor = Net(state_shape=3, action_shape=actor_output_dim(HYBRID))
    with pytest.raises(ValueError, match="with a Box part; use ProbabilisticActorPolicy"):
        DiscreteActorPolicy(actor=actor, action_space=HYBRID)


def test_a_structured_space_without_product_distribution_is_a_clear_error() -> None:
    policy = ProbabilisticActorPolicy(
        actor=Net(state_shape=3, action_shape=actor_output_dim(HYBRID)),
        dist_fn=lambda logits: torch.distributions.Categorical(logits=logits),
        action_space=HYBRID,
    )
    with pytest.raises(ValueError, match=r"needs a product distribution.*product_dist_fn"):
        policy(Batch(obs=np.zeros((2, 3), dtype=np.float32), info=Batch()))


def test_probability_actors_cannot_feed_a_product_distribution() -> None:
    actor = DiscreteActor(preprocess_net=Net(state_shape=3), action_shape=7)
    with pytest.raises(ValueError, match="softmax_output=False"):
        DiscreteActorPolicy(actor=actor, action_space=MULTI_DISCRETE)


# ---------------------------------------------------------------------- env boundary
def test_random_collection_and_compute_action_with_hybrid_actions() -> None:
    seed_everything()
    policy = ProbabilisticActorPolicy(
        actor=Net(state_shape=3, action_shape=actor_output_dim(HYBRID), hidden_sizes=[8]),
        dist_fn=product_dist_fn(HYBRID),
        action_space=HYBRID,
    )
    algorithm = PPO(
        policy=policy,
        critic=DiscreteCritic(preprocess_net=Net(state_shape=3, hidden_sizes=[8])),
        optim=AdamOptimizerFactory(),
    )
    collector = Collector(algorithm, vector_env(HybridTargetEnv, 2, 0), VectorReplayBuffer(100, 2))
    collector.reset()
    assert collector.collect(n_step=10, random=True).n_collected_steps == 10
    stored = collector.buffer.act[: len(collector.buffer)]
    assert stored.shape == (10, 2) and set(stored[:, 0].tolist()) <= {0.0, 1.0}
    assert np.abs(stored[:, 1]).max() <= 1.0
    action = policy.compute_action(np.zeros(3, dtype=np.float32))
    assert HYBRID.contains(action)


@pytest.mark.parametrize("name", ["Reinforce", "A2C", "PPO", "NPG", "TRPO"])
def test_policy_gradient_updates_on_hybrid_actions(name: str) -> None:
    """Every policy-gradient algorithm collects hybrid actions the env accepts and updates
    both heads (the categorical and the Gaussian parameters of the flat actor output)."""
    seed_everything()
    policy = ProbabilisticActorPolicy(
        actor=Net(state_shape=3, action_shape=actor_output_dim(HYBRID), hidden_sizes=[16]),
        dist_fn=product_dist_fn(HYBRID),
        action_space=HYBRID,
    )
    optim = AdamOptimizerFactory(lr=1e-2)
    algorithm: Algorithm
    if name == "Reinforce":
        algorithm = Reinforce(policy=policy, optim=optim)
    else:
        critic = DiscreteCritic(preprocess_net=Net(state_shape=3, hidden_sizes=[16]))
        algorithm = {"A2C": A2C, "PPO": PPO, "NPG": NPG, "TRPO": TRPO}[name](
            policy=policy, critic=critic, optim=optim
        )
    collector = Collector(algorithm, vector_env(HybridTargetEnv, 2, 0), VectorReplayBuffer(200, 2))
    collector.reset()
    collector.collect(n_step=40)
    obs = Batch(obs=np.eye(3, dtype=np.float32), info=Batch())
    before = policy(obs).logits.detach().clone()
    with policy_within_training_step(policy):
        algorithm.update(buffer=collector.buffer, batch_size=16, repeat=2)  # type: ignore[call-arg]
    change = (policy(obs).logits.detach() - before).abs()
    assert torch.isfinite(change).all()
    assert change[:, :2].max() > 0 and change[:, 2:].max() > 0  # categorical and Gaussian heads


def test_own_distributions_over_multi_binary_actions_keep_working() -> None:
    """A MultiBinary policy with a dist_fn of its own, as written for the published library,
    is left alone: no product distribution is forced on it."""
    policy = ProbabilisticActorPolicy(
        actor=Net(state_shape=3, action_shape=3),
        dist_fn=lambda logits: Independent(torch.distributions.Bernoulli(logits=logits), 1),
        action_space=MULTI_BINARY,
    )
    result = policy(Batch(obs=np.zeros((4, 3), dtype=np.float32), info=Batch()))
    assert isinstance(result.dist, Independent) and result.act.shape == (4, 3)
