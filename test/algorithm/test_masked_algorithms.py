"""Tests of legal-action masking in every discrete-action algorithm (the mask functions
themselves are tested in ``test/spaces/test_masks.py``).

Each algorithm is checked on the same masked data: acting never picks an illegal action (in
training, with exploration, and in evaluation), the update's losses are finite and its
distributions give illegal actions probability 0, and an all-illegal mask row is a clear error.
DQN and PPO also learn a small env that raises on any illegal action.
"""

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch.distributions import Categorical

from tianshou.algorithm import (
    A2C,
    BDQN,
    C51,
    DQN,
    FQF,
    IQN,
    NPG,
    PPO,
    QRDQN,
    TRPO,
    DiscreteBCQ,
    DiscreteCQL,
    DiscreteCRR,
    DiscreteSAC,
    OffPolicyImitationLearning,
    RainbowDQN,
    Reinforce,
)
from tianshou.algorithm.algorithm_base import Algorithm, OnPolicyAlgorithm, RandomActionPolicy
from tianshou.algorithm.imitation.discrete_bcq import DiscreteBCQPolicy
from tianshou.algorithm.imitation.imitation_base import ImitationPolicy
from tianshou.algorithm.modelfree.bdqn import BDQNPolicy
from tianshou.algorithm.modelfree.c51 import C51Policy
from tianshou.algorithm.modelfree.discrete_sac import DiscreteSACPolicy
from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
from tianshou.algorithm.modelfree.fqf import FQFPolicy
from tianshou.algorithm.modelfree.iqn import IQNPolicy
from tianshou.algorithm.modelfree.qrdqn import QRDQNPolicy
from tianshou.algorithm.modelfree.reinforce import DiscreteActorPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import Batch, Collector, ReplayBuffer, VectorReplayBuffer
from tianshou.data.utils.converter import to_numpy
from tianshou.env import DummyVectorEnv
from tianshou.spaces.masks import random_legal_actions
from tianshou.trainer import OffPolicyTrainerParams, OnPolicyTrainerParams
from tianshou.utils.net.common import BranchingNet, Net
from tianshou.utils.net.discrete import (
    DiscreteActor,
    DiscreteCritic,
    FractionProposalNetwork,
    FullQuantileFunction,
    ImplicitQuantileNetwork,
)
from tianshou.utils.torch_utils import policy_within_training_step

OBS_DIM = 3
N = 4
SPACE = gym.spaces.Discrete(N)


# ---------------------------------------------------------------------- the algorithms
def net(action_shape: int = N, **kwargs: Any) -> Net:
    return Net(state_shape=OBS_DIM, action_shape=action_shape, hidden_sizes=[16], **kwargs)


def actor(softmax_output: bool = False) -> DiscreteActor:
    return DiscreteActor(preprocess_net=net(0), action_shape=N, softmax_output=softmax_output)


def critic(last_size: int = 1) -> DiscreteCritic:
    return DiscreteCritic(preprocess_net=net(0), last_size=last_size)


def pg_policy(**kwargs: Any) -> DiscreteActorPolicy:
    return DiscreteActorPolicy(actor=actor(), action_space=SPACE, deterministic_eval=True, **kwargs)


OPTIM = AdamOptimizerFactory(lr=1e-3)
EPS = {"eps_training": 0.5, "eps_inference": 0.5}

BUILDERS: dict[str, Callable[[], Algorithm]] = {
    "dqn": lambda: DQN(
        policy=DiscreteQLearningPolicy(model=net(), action_space=SPACE, **EPS),
        optim=OPTIM,
        target_update_freq=2,
    ),
    "c51": lambda: C51(
        policy=C51Policy(
            model=net(num_atoms=11, softmax=True), action_space=SPACE, num_atoms=11, **EPS
        ),
        optim=OPTIM,
        target_update_freq=2,
    ),
    "rainbow": lambda: RainbowDQN(
        policy=C51Policy(
            model=net(num_atoms=11, softmax=True), action_space=SPACE, num_atoms=11, **EPS
        ),
        optim=OPTIM,
        target_update_freq=2,
    ),
    "qrdqn": lambda: QRDQN(
        policy=QRDQNPolicy(model=net(num_atoms=8), action_space=SPACE, **EPS),
        optim=OPTIM,
        num_quantiles=8,
        target_update_freq=2,
    ),
    "iqn": lambda: IQN(
        policy=IQNPolicy(
            model=ImplicitQuantileNetwork(preprocess_net=net(0), action_shape=N, num_cosines=8),
            action_space=SPACE,
            **EPS,
        ),
        optim=OPTIM,
        target_update_freq=2,
    ),
    "fqf": lambda: FQF(
        policy=FQFPolicy(
            model=FullQuantileFunction(preprocess_net=net(0), action_shape=N, num_cosines=8),
            fraction_model=FractionProposalNetwork(num_fractions=8, embedding_dim=16),
            action_space=SPACE,
            **EPS,
        ),
        optim=OPTIM,
        fraction_optim=OPTIM,
        num_fractions=8,
        target_update_freq=2,
    ),
    "reinforce": lambda: Reinforce(policy=pg_policy(), optim=OPTIM),
    "a2c": lambda: A2C(policy=pg_policy(), critic=critic(), optim=OPTIM),
    "ppo": lambda: PPO(policy=pg_policy(), critic=critic(), optim=OPTIM),
    "ppo_probs": lambda: PPO(
        policy=DiscreteActorPolicy(
            actor=actor(softmax_output=True), dist_fn=Categorical, action_space=SPACE
        ),
        critic=critic(),
        optim=OPTIM,
    ),
    "npg": lambda: NPG(policy=pg_policy(), critic=critic(), optim=OPTIM),
    "trpo": lambda: TRPO(policy=pg_policy(), critic=critic(), optim=OPTIM),
    "discrete_sac": lambda: DiscreteSAC(
        policy=DiscreteSACPolicy(actor=actor(), action_space=SPACE),
        policy_optim=OPTIM,
        critic=critic(N),
        critic_optim=OPTIM,
    ),
    "discrete_bcq": lambda: DiscreteBCQ(
        policy=DiscreteBCQPolicy(
            model=net(),
            imitator=actor(),
            action_space=SPACE,
            target_update_freq=2,
            **{"eps_inference": 0.5},
        ),
        optim=OPTIM,
        target_update_freq=2,
    ),
    "discrete_cql": lambda: DiscreteCQL(
        policy=QRDQNPolicy(model=net(num_atoms=8), action_space=SPACE, **EPS),
        optim=OPTIM,
        num_quantiles=8,
        target_update_freq=2,
    ),
    "discrete_crr": lambda: DiscreteCRR(
        policy=pg_policy(), critic=critic(N), optim=OPTIM, target_update_freq=2
    ),
    "imitation": lambda: OffPolicyImitationLearning(
        policy=ImitationPolicy(actor=net(), action_space=SPACE), optim=OPTIM
    ),
}


def random_mask(num: int, rng: np.random.Generator, shape: tuple[int, ...] = (N,)) -> np.ndarray:
    """Random masks with at least one legal action per row (per branch)."""
    mask = rng.random((num, *shape)) < 0.4
    first = rng.integers(0, shape[-1], size=(num, *shape[:-1]))
    np.put_along_axis(mask, first[..., None], True, axis=-1)
    return mask


def masked_batch(num: int, seed: int = 0, shape: tuple[int, ...] = (N,)) -> Batch:
    rng = np.random.default_rng(seed)
    obs = Batch(
        obs=rng.normal(size=(num, OBS_DIM)).astype(np.float32), mask=random_mask(num, rng, shape)
    )
    return Batch(obs=obs, info=Batch(env_id=np.arange(num)))


def masked_buffer(size: int = 64, shape: tuple[int, ...] = (N,)) -> ReplayBuffer:
    """Episodes of 8 legal random steps; each terminal next observation has no legal action
    (a finished game), which targets must tolerate."""
    rng = np.random.default_rng(1)
    buffer = ReplayBuffer(size)
    obs = masked_batch(size + 1, seed=2, shape=shape).obs
    for t in range(size):
        terminated = t % 8 == 7
        next_mask = np.zeros(shape, bool) if terminated else obs.mask[t + 1]
        act = random_legal_actions(obs.mask[t], rng)
        buffer.add(
            Batch(
                obs=obs[t],
                act=act,
                rew=float(rng.normal()),
                terminated=terminated,
                truncated=False,
                obs_next=Batch(obs=obs.obs[t + 1], mask=next_mask),
                info={"env_id": 0},
            )
        )
    return buffer


def update(algorithm: Algorithm, buffer: ReplayBuffer) -> Any:
    with policy_within_training_step(algorithm.policy):
        if isinstance(algorithm, OnPolicyAlgorithm):
            return algorithm.update(buffer, batch_size=16, repeat=2)
        return algorithm.update(buffer, sample_size=32)


def build(name: str) -> Algorithm:
    torch.manual_seed(0)
    return BUILDERS[name]()


@pytest.mark.parametrize("name", sorted(BUILDERS))
class TestEveryDiscreteAlgorithm:
    def test_acting_never_picks_an_illegal_action(self, name: str) -> None:
        policy = build(name).policy
        batch = masked_batch(1000)
        legal = batch.obs.mask
        rows = np.arange(len(legal))
        for training in (True, False):
            policy.train(training)
            policy.is_within_training_step = training
            with torch.no_grad():
                act = to_numpy(policy(batch).act)
            assert legal[rows, act].all()
            explored = policy.add_exploration_noise(act, batch)
            assert legal[rows, explored].all()
        # acting on the unmasked network input would pick illegal actions
        with torch.no_grad():
            unmasked = to_numpy(policy(Batch(obs=batch.obs.obs, info=batch.info)).act)
        assert not legal[rows, unmasked].all()

    def test_update_on_masked_data_is_finite(self, name: str) -> None:
        algorithm = build(name)
        stats = update(algorithm, masked_buffer())
        losses = stats.get_loss_stats_dict()
        assert losses and all(np.isfinite(v) for v in losses.values())
        for param in algorithm.parameters():
            assert torch.isfinite(param).all()

    def test_an_all_illegal_row_is_a_clear_error(self, name: str) -> None:
        policy = build(name).policy
        batch = masked_batch(5)
        batch.obs.mask[3] = False
        with (
            pytest.raises(ValueError, match=r"row 3 \(env_id 3\) allows no action"),
            torch.no_grad(),
        ):
            policy(batch)


def policy_distribution(policy: torch.nn.Module, batch: Batch) -> Categorical:
    """The action distribution a stochastic policy learns with."""
    if isinstance(policy, DiscreteSACPolicy):
        return Categorical(logits=policy.log_probs(batch))
    return policy(batch).dist


@pytest.mark.parametrize(
    "name", ["reinforce", "a2c", "ppo", "ppo_probs", "npg", "trpo", "discrete_sac", "discrete_crr"]
)
def test_learning_distributions_give_illegal_actions_zero_probability(name: str) -> None:
    policy = build(name).policy
    batch = masked_batch(200)
    legal = torch.as_tensor(batch.obs.mask)
    dist = policy_distribution(policy, batch)
    assert (dist.probs[~legal] == 0).all()
    assert torch.allclose(dist.probs.sum(-1), torch.ones(200))
    by_hand = -(dist.probs * dist.probs.clamp_min(1e-30).log()).sum(-1)
    assert torch.allclose(dist.entropy(), by_hand, atol=1e-5)


def test_npg_kl_is_between_the_masked_distributions() -> None:
    algorithm = build("npg")
    batch = masked_batch(50)
    result = algorithm.policy(batch)
    old = algorithm._constant_copy(result, batch)
    assert (old.probs[~torch.as_tensor(batch.obs.mask)] == 0).all()
    kl = torch.distributions.kl_divergence(old, result.dist)
    assert torch.allclose(kl, torch.zeros(50), atol=1e-6)


def test_bdqn_masks_each_branch() -> None:
    torch.manual_seed(0)
    model = BranchingNet(
        state_shape=OBS_DIM, num_branches=2, action_per_branch=N, common_hidden_sizes=[16]
    )
    policy = BDQNPolicy(
        model=model, action_space=gym.spaces.MultiDiscrete([N, N]), eps_training=0.5
    )
    batch = masked_batch(500, shape=(2, N))
    legal = batch.obs.mask
    with policy_within_training_step(policy), torch.no_grad():
        act = to_numpy(policy(batch).act)
        explored = policy.add_exploration_noise(act, batch)
    for chosen in (act, explored):
        assert np.take_along_axis(legal, chosen[..., None], axis=-1).all()
    algorithm = BDQN(policy=policy, optim=OPTIM, target_update_freq=2)
    stats = update(algorithm, masked_buffer(shape=(2, N)))
    assert np.isfinite(stats.loss)
    batch.obs.mask[7, 1] = False
    with pytest.raises(ValueError, match="row 7, branch 1"):
        policy(batch)


def test_dqn_target_bootstraps_from_the_best_legal_next_action_only() -> None:
    algorithm = build("dqn")
    buffer = masked_buffer()
    batch, indices = buffer.sample(0)
    returns = algorithm._preprocess_batch(batch, buffer, indices).returns
    with torch.no_grad():
        q_next = algorithm.model_old(batch.obs_next.obs)[0]
    legal = torch.as_tensor(batch.obs_next.mask)
    best_legal = q_next.masked_fill(~legal, -torch.inf).max(dim=1).values
    alive = ~torch.as_tensor(batch.terminated)
    expected = torch.as_tensor(batch.rew, dtype=torch.float32) + 0.99 * torch.where(
        alive, best_legal, 0.0
    )
    assert torch.allclose(returns.flatten(), expected, atol=1e-5)


def test_random_action_policy_draws_legal_actions() -> None:
    policy = RandomActionPolicy(action_space=gym.spaces.Discrete(N))
    batch = masked_batch(500)
    act = policy(batch).act
    assert batch.obs.mask[np.arange(500), act].all()


# ---------------------------------------------------------------------- learning
class MaskedTargetEnv(gym.Env):
    """Each step shows a target (one-hot) and a mask of two legal actions, the target among
    them; hitting the target pays 1. Any illegal action is against the rules and raises, so a
    policy that ignores the mask fails at once. A random legal policy earns half of the
    maximum return of ``EPISODE_LENGTH``."""

    EPISODE_LENGTH = 5

    def __init__(self) -> None:
        self.observation_space = gym.spaces.Dict(
            {"obs": gym.spaces.Box(0.0, 1.0, (N,)), "mask": gym.spaces.MultiBinary(N)}
        )
        self.action_space = gym.spaces.Discrete(N)
        self._target = 0
        self._mask = np.ones(N, dtype=bool)
        self._steps = 0

    def _observe(self) -> dict[str, np.ndarray]:
        self._target = int(self.np_random.integers(N))
        decoy = (self._target + 1 + int(self.np_random.integers(N - 1))) % N
        self._mask = np.zeros(N, dtype=bool)
        self._mask[[self._target, decoy]] = True
        return {"obs": np.eye(N, dtype=np.float32)[self._target], "mask": self._mask.copy()}

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        super().reset(seed=seed)
        self._steps = 0
        return self._observe(), {}

    def step(self, action: int) -> tuple[dict, float, bool, bool, dict]:
        if not self._mask[action]:
            raise ValueError(f"illegal action {action}; legal: {np.flatnonzero(self._mask)}")
        reward = float(action == self._target)
        self._steps += 1
        return self._observe(), reward, self._steps >= self.EPISODE_LENGTH, False, {}


def masked_envs(num: int, seed: int) -> DummyVectorEnv:
    envs = DummyVectorEnv([MaskedTargetEnv for _ in range(num)])
    envs.seed(seed)
    return envs


THRESHOLD = 4.8


def mean_test_return(algorithm: Algorithm) -> float:
    """The mean return of 20 test episodes of the algorithm's policy, without exploration."""
    collector = Collector(algorithm, masked_envs(10, 1))
    collector.reset()
    return float(collector.collect(n_episode=20).returns.mean())


@pytest.mark.usefixtures("one_thread")
def test_dqn_learns_the_masked_env() -> None:
    torch.manual_seed(0)
    policy = DiscreteQLearningPolicy(
        model=Net(state_shape=N, action_shape=N, hidden_sizes=[32]),
        action_space=SPACE,
        eps_training=0.2,
    )
    algorithm = DQN(
        policy=policy, optim=AdamOptimizerFactory(lr=1e-2), gamma=0.5, target_update_freq=20
    )
    assert mean_test_return(algorithm) < THRESHOLD - 1
    training = Collector(
        algorithm, masked_envs(4, 0), VectorReplayBuffer(2000, 4), exploration_noise=True
    )
    training.reset()
    training.collect(n_step=200, random=True)
    algorithm.run_training(
        OffPolicyTrainerParams(
            training_collector=training,
            test_collector=Collector(algorithm, masked_envs(10, 2)),
            max_epochs=10,
            epoch_num_steps=400,
            collection_step_num_env_steps=20,
            test_step_num_episodes=20,
            batch_size=64,
            stop_fn=lambda mean_return: mean_return >= THRESHOLD,
            show_progress=False,
            verbose=False,
        )
    )
    assert mean_test_return(algorithm) >= THRESHOLD


@pytest.mark.usefixtures("one_thread")
def test_ppo_learns_the_masked_env() -> None:
    torch.manual_seed(0)
    policy = DiscreteActorPolicy(
        actor=DiscreteActor(
            preprocess_net=Net(state_shape=N, hidden_sizes=[32]),
            action_shape=N,
            softmax_output=False,
        ),
        action_space=SPACE,
        deterministic_eval=True,
    )
    algorithm = PPO(
        policy=policy,
        critic=DiscreteCritic(preprocess_net=Net(state_shape=N, hidden_sizes=[32])),
        optim=AdamOptimizerFactory(lr=1e-2),
        gamma=0.5,
    )
    assert mean_test_return(algorithm) < THRESHOLD - 1
    algorithm.run_training(
        OnPolicyTrainerParams(
            training_collector=Collector(algorithm, masked_envs(4, 0), VectorReplayBuffer(400, 4)),
            test_collector=Collector(algorithm, masked_envs(10, 2)),
            max_epochs=10,
            epoch_num_steps=400,
            collection_step_num_env_steps=200,
            update_step_num_repetitions=4,
            batch_size=64,
            test_step_num_episodes=20,
            stop_fn=lambda mean_return: mean_return >= THRESHOLD,
            show_progress=False,
            verbose=False,
        )
    )
    assert mean_test_return(algorithm) >= THRESHOLD
