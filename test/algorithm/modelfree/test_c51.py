"""Tests of C51Policy and C51: the categorical projection, targets, loss, learning, determinism."""

import copy
import math

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn

from tianshou.algorithm.modelfree.c51 import C51, C51Policy, project_onto_support
from tianshou.algorithm.optim import AdamOptimizerFactory, TorchOptimizerFactory
from tianshou.data import Batch, Collector, InfoStats, ReplayBuffer, VectorReplayBuffer
from tianshou.env import DummyVectorEnv
from tianshou.trainer import OffPolicyTrainerParams
from tianshou.utils.determinism import TraceDeterminismTest, TraceLog, TraceLoggerContext
from tianshou.utils.net.common import Net
from tianshou.utils.torch_utils import policy_within_training_step

NUM_ACTIONS = 2
NUM_ATOMS = 5
OBS_DIM = 2


class DistNet(nn.Module):
    """A small MLP returning per-action softmax distributions ``(B, A, num_atoms)``."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(OBS_DIM, 8), nn.Tanh(), nn.Linear(8, 2 * NUM_ATOMS))

    def forward(self, obs, state=None, info=None):
        logits = self.net(torch.as_tensor(obs, dtype=torch.float32))
        return logits.view(-1, NUM_ACTIONS, NUM_ATOMS).softmax(-1), state


class FixedDist(nn.Module):
    """Returns the given per-action distributions for every observation."""

    def __init__(self, probs: list[list[float]]) -> None:
        super().__init__()
        self.probs = nn.Parameter(torch.tensor(probs))

    def forward(self, obs, state=None, info=None):
        return self.probs.expand(len(obs), -1, -1), state


def make_policy(model: nn.Module | None = None, **kwargs) -> C51Policy:
    torch.manual_seed(0)
    kwargs = {"num_atoms": NUM_ATOMS, "v_min": -2.0, "v_max": 2.0, **kwargs}
    return C51Policy(
        model=model or DistNet(), action_space=gym.spaces.Discrete(NUM_ACTIONS), **kwargs
    )


def make_c51(policy: C51Policy | None = None, lr: float = 0.1, **kwargs) -> C51:
    return C51(
        policy=policy or make_policy(),
        optim=TorchOptimizerFactory(torch.optim.SGD, lr=lr),
        **kwargs,
    )


def filled_buffer(steps: int = 10, truncate_at: int | None = None) -> ReplayBuffer:
    """Episodes of length 4 (terminated), rewards 0.1, 0.2, ...; optionally one truncation."""
    buffer = ReplayBuffer(32)
    for t in range(steps):
        buffer.add(
            Batch(
                obs=np.array([t, 1.0], dtype=np.float32),
                act=t % NUM_ACTIONS,
                rew=0.1 * (t + 1),
                terminated=t % 4 == 3,
                truncated=t == truncate_at,
                obs_next=np.array([t + 1, 1.0], dtype=np.float32),
                info={},
            )
        )
    return buffer


def naive_projection(atoms: np.ndarray, probs: np.ndarray, support: np.ndarray) -> np.ndarray:
    """The textbook per-atom loop: split each clipped atom between its floor and ceil atom."""
    v_min, v_max = support[0], support[-1]
    delta = (v_max - v_min) / (len(support) - 1)
    out = np.zeros_like(probs, dtype=np.float64)
    for b in range(atoms.shape[0]):
        for j in range(atoms.shape[1]):
            pos = (min(max(atoms[b, j], v_min), v_max) - v_min) / delta
            low, high = math.floor(pos), math.ceil(pos)
            if low == high:
                out[b, low] += probs[b, j]
            else:
                out[b, low] += probs[b, j] * (high - pos)
                out[b, high] += probs[b, j] * (pos - low)
    return out


class TestProjection:
    def test_matches_a_naive_loop_on_random_batches(self) -> None:
        rng = np.random.default_rng(0)
        support = np.linspace(-3.0, 3.0, 7)
        atoms = rng.uniform(-5, 5, size=(16, 7))
        atoms[0] = support  # exactly on the support
        atoms[1] = 10.0  # all above v_max
        atoms[2] = -10.0  # all below v_min
        probs = rng.dirichlet(np.ones(7), size=16)
        got = project_onto_support(
            torch.tensor(atoms), torch.tensor(probs), torch.tensor(support)
        ).numpy()
        np.testing.assert_allclose(got, naive_projection(atoms, probs, support), atol=1e-12)
        np.testing.assert_allclose(got.sum(1), 1.0, atol=1e-12)
        np.testing.assert_allclose(got[0], probs[0], atol=1e-12)
        assert got[1, -1] == pytest.approx(1.0) and got[2, 0] == pytest.approx(1.0)

    def test_scatter_projection_equals_the_dense_formula_and_leaves_inputs_alone(self) -> None:
        torch.manual_seed(0)
        support = torch.linspace(-10.0, 10.0, 51)
        atoms = (torch.randn(64, 51) * 12).requires_grad_()
        probs = torch.rand(64, 51).softmax(-1).requires_grad_()
        atoms_before, probs_before = atoms.detach().clone(), probs.detach().clone()
        weight = 1 - (atoms.clamp(-10.0, 10.0).unsqueeze(1) - support.view(1, -1, 1)).abs() / (
            support[1] - support[0]
        )
        plain = (weight.clamp(0, 1) * probs.unsqueeze(1)).sum(-1)
        plain_grads = torch.autograd.grad(plain.square().sum(), (atoms, probs))
        got = project_onto_support(atoms, probs, support)
        # same sums in another order: equal up to float32 rounding
        torch.testing.assert_close(got, plain, rtol=0, atol=1e-6)
        for got_grad, plain_grad in zip(
            torch.autograd.grad(got.square().sum(), (atoms, probs)), plain_grads, strict=True
        ):
            torch.testing.assert_close(got_grad, plain_grad, rtol=1e-5, atol=1e-6)
        assert torch.equal(atoms, atoms_before) and torch.equal(probs, probs_before)

    def test_hand_computed_split(self) -> None:
        support = torch.tensor([0.0, 1.0, 2.0])
        atoms = torch.tensor([[0.25, 1.5, 2.0]])
        probs = torch.tensor([[0.4, 0.4, 0.2]])
        got = project_onto_support(atoms, probs, support)
        # 0.25 -> 0.75/0.25 of 0.4 on atoms 0/1; 1.5 -> halves of 0.4 on 1/2; 2.0 -> atom 2
        assert torch.allclose(got, torch.tensor([[0.3, 0.1 + 0.2, 0.2 + 0.2]]))

    def test_nan_atom_poisons_its_row_only(self) -> None:
        support = torch.linspace(-1.0, 1.0, 5)
        atoms = torch.tensor([[0.1, float("nan"), 0.3, 0.0, 0.9], [0.1, 0.2, 0.3, 0.0, 0.9]])
        got = project_onto_support(atoms, torch.full((2, 5), 0.2), support)
        assert got[0].isnan().any() and not got[1].isnan().any()

    def test_mixed_precision_follows_torch_promotion(self) -> None:
        support = torch.linspace(-1.0, 1.0, 5)
        atoms = torch.tensor([[0.1, -0.2, 0.3, 0.0, 0.9]], dtype=torch.float64)
        got = project_onto_support(atoms, torch.full((1, 5), 0.2), support)
        assert got.dtype == torch.float64 and got.sum().item() == pytest.approx(1.0)


class TestPolicy:
    def test_q_values_are_distribution_means_and_act_is_their_argmax(self) -> None:
        probs = [[0.5, 0.5, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.5, 0.5]]
        policy = make_policy(FixedDist(probs))
        result = policy(Batch(obs=np.zeros((3, OBS_DIM)), info=Batch()))
        assert result.logits.shape == (3, NUM_ACTIONS, NUM_ATOMS)
        assert result.act.tolist() == [1, 1, 1]
        q = policy.compute_q_value(result.logits, None)
        assert torch.allclose(q, torch.tensor([[-1.5, 1.5]] * 3))

    def test_mask_applies_to_the_means(self) -> None:
        policy = make_policy(FixedDist([[0.2] * 5, [0.0, 0.0, 0.0, 0.0, 1.0]]))
        q = policy.compute_q_value(policy.model(np.zeros((1, 2)))[0], np.array([[True, False]]))
        assert q.tolist() == [[pytest.approx(0.0), -np.inf]]

    def test_support_follows_the_arguments_and_the_module_device(self) -> None:
        policy = make_policy(num_atoms=3, v_min=-1.0, v_max=3.0)
        assert policy.support.tolist() == [-1.0, 1.0, 3.0]
        assert policy.delta_z == 2.0
        assert "support" in policy.state_dict()

    def test_arguments_may_be_positional_in_the_published_order(self) -> None:
        space = gym.spaces.Discrete(NUM_ACTIONS)
        policy = C51Policy(DistNet(), space, None, 3, -1.0, 3.0, 0.25, 0.5)
        assert policy.action_space is space
        assert policy.support.tolist() == [-1.0, 1.0, 3.0]
        assert (policy.eps_training, policy.eps_inference) == (0.25, 0.5)

    @pytest.mark.parametrize(
        ("kwargs", "match"),
        [({"num_atoms": 1}, "num_atoms"), ({"v_min": 1.0, "v_max": 1.0}, "v_min")],
    )
    def test_bad_arguments(self, kwargs: dict, match: str) -> None:
        with pytest.raises(ValueError, match=match):
            make_policy(**kwargs)

    def test_non_distributional_output_names_the_expected_shape(self) -> None:
        with pytest.raises(ValueError, match=r"\(batch, n_actions, 5\)"):
            make_policy().compute_q_value(torch.zeros(2, NUM_ACTIONS), None)


def naive_target(c51: C51, buffer: ReplayBuffer, index: int, n_step: int) -> np.ndarray:
    """Target distribution of one transition, by walking the episode by hand."""
    ret, discount, last = 0.0, 1.0, index
    for k in range(n_step):
        last = index + k
        ret += discount * buffer.rew[last]
        discount *= c51.gamma
        if buffer.terminated[last] or buffer.truncated[last] or last == len(buffer) - 1:
            break  # episode end, or the newest row: bootstrap from here
    support = c51.policy.support.numpy().astype(np.float64)
    obs_next = buffer.obs_next[last : last + 1]
    with torch.no_grad():
        probs = c51.policy.model(obs_next)[0][0].numpy()
    act = int((probs @ support).argmax())
    dist = probs[act : act + 1]
    if buffer.terminated[last]:
        atoms = np.full((1, len(support)), ret)
    else:
        atoms = (ret + discount * support)[None]
    return naive_projection(atoms, dist, support)[0]


class TestAlgorithm:
    @pytest.mark.parametrize("n_step", [1, 3])
    def test_target_dist_matches_a_naive_episode_walk(self, n_step: int) -> None:
        c51 = make_c51(gamma=0.9, n_step_return_horizon=n_step)
        buffer = filled_buffer(truncate_at=5)  # episodes [0..3] terminated, [4, 5] truncated
        indices = np.arange(10)
        batch = c51._preprocess_batch(buffer[indices], buffer, indices)
        assert batch.returns.shape == (10, NUM_ATOMS)
        for i in range(10):
            np.testing.assert_allclose(
                batch.target_dist[i].numpy(), naive_target(c51, buffer, i, n_step), atol=1e-6
            )

    def test_terminal_target_is_the_projected_reward(self) -> None:
        c51 = make_c51()
        buffer = filled_buffer()
        batch = c51._preprocess_batch(buffer[np.array([3])], buffer, np.array([3]))
        # reward 0.4 lies between atoms 0 and 1 of [-2, -1, 0, 1, 2]: 60% / 40%
        assert torch.allclose(batch.target_dist, torch.tensor([[0.0, 0.0, 0.6, 0.4, 0.0]]))

    def test_target_network_values_the_online_greedy_action(self) -> None:
        online = FixedDist([[1.0, 0, 0, 0, 0], [0, 0, 0, 0, 1.0]])
        c51 = make_c51(make_policy(online), target_update_freq=5)
        assert c51.model_old is not None
        with torch.no_grad():
            c51.model_old.probs.copy_(torch.tensor([[0, 0, 0, 0, 1.0], [0, 0, 1.0, 0, 0]]))
        next_dist = c51._next_dist(np.zeros((2, OBS_DIM)))
        assert next_dist.tolist() == [[0, 0, 1.0, 0, 0]] * 2

    def test_update_lowers_the_cross_entropy_and_sets_priorities(self) -> None:
        c51 = make_c51(lr=0.5)
        buffer = filled_buffer()
        indices = np.arange(9)
        batch = c51._preprocess_batch(buffer[indices], buffer, indices)
        with policy_within_training_step(c51.policy):
            first = c51._update_with_batch(copy.deepcopy(batch)).loss
            for _ in range(20):
                last_batch = copy.deepcopy(batch)
                last = c51._update_with_batch(last_batch).loss
        assert last < first
        assert last_batch.weight.shape == (9,)
        assert last_batch.weight.mean().item() == pytest.approx(last, rel=1e-5)

    def test_importance_weights_scale_the_loss(self) -> None:
        c51 = make_c51()
        buffer = filled_buffer()
        indices = np.arange(8)
        batch = c51._preprocess_batch(buffer[indices], buffer, indices)
        weighted = copy.deepcopy(batch)
        weighted.weight = np.full(8, 0.25)
        state = copy.deepcopy(c51.state_dict())
        with policy_within_training_step(c51.policy):
            plain = c51._update_with_batch(batch).loss
            c51.load_state_dict(state)
            quarter = c51._update_with_batch(weighted).loss
        assert quarter == pytest.approx(plain / 4, rel=1e-5)

    def test_update_through_the_buffer(self) -> None:
        c51 = make_c51(target_update_freq=2, n_step_return_horizon=2)
        with policy_within_training_step(c51.policy):
            stats = c51.update(filled_buffer(), 6)
        assert math.isfinite(stats.loss)


def train_cartpole(
    seed: int, max_epochs: int, epoch_num_steps: int, stop_at: float | None
) -> tuple[InfoStats, TraceLog]:
    """C51 on CartPole-v1 and its trace; stops once the test return reaches ``stop_at``."""
    np.random.seed(seed)
    torch.manual_seed(seed)
    task = "CartPole-v1"
    training_envs = DummyVectorEnv([lambda: gym.make(task) for _ in range(8)])
    test_envs = DummyVectorEnv([lambda: gym.make(task) for _ in range(10)])
    training_envs.seed(seed)
    test_envs.seed(seed + 1)
    net = Net(
        state_shape=4, action_shape=2, hidden_sizes=[128, 128, 128], softmax=True, num_atoms=51
    )
    policy = C51Policy(
        model=net,
        action_space=training_envs.action_space[0],
        num_atoms=51,
        v_min=-10.0,
        v_max=10.0,
        eps_training=0.5,
    )
    algorithm = C51(
        policy=policy,
        optim=AdamOptimizerFactory(lr=1e-3),
        gamma=0.9,
        n_step_return_horizon=3,
        target_update_freq=320,
    )
    training_collector = Collector(
        algorithm, training_envs, VectorReplayBuffer(20000, 8), exploration_noise=True
    )
    test_collector = Collector(algorithm, test_envs)
    training_collector.reset()
    test_collector.reset()

    def decay_eps(epoch: int, env_step: int) -> None:
        policy.set_eps_training(max(0.05, 0.5 * (1 - env_step / 10000)))

    with TraceLoggerContext() as trace:
        result = algorithm.run_training(
            OffPolicyTrainerParams(
                training_collector=training_collector,
                test_collector=test_collector,
                max_epochs=max_epochs,
                epoch_num_steps=epoch_num_steps,
                collection_step_num_env_steps=16,
                test_step_num_episodes=10,
                batch_size=64,
                update_step_num_gradient_steps_per_sample=0.5,
                training_fn=decay_eps,
                stop_fn=None if stop_at is None else (lambda reward: reward >= stop_at),
                show_progress=False,
                verbose=False,
            )
        )
    return result, trace.get_log()


@pytest.mark.slow
@pytest.mark.usefixtures("one_thread")
def test_c51_learns_cartpole() -> None:
    result, _ = train_cartpole(seed=0, max_epochs=20, epoch_num_steps=1000, stop_at=195.0)
    assert result.best_reward >= 195.0
    assert result.train_step <= 20 * 1008


@pytest.mark.usefixtures("one_thread")
def test_c51_training_is_deterministic(tmp_path) -> None:
    snapshot = TraceDeterminismTest(base_path=tmp_path)
    first = train_cartpole(seed=3, max_epochs=1, epoch_num_steps=200, stop_at=None)[1]
    snapshot.check(first, "c51", create_reference_result=True)
    second = train_cartpole(seed=3, max_epochs=1, epoch_num_steps=200, stop_at=None)[1]
    result = snapshot.check(second, "c51")
    assert result.success and result.first_difference is None
