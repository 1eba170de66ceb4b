"""The shared update helpers: the finite-loss guard, minibatches, frozen and exclusive parameters,
and the import structure they allow (algorithms import defining modules, not each other)."""

import ast
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

import tianshou.algorithm
from test.algorithm.modelfree.test_sac import OBS_DIM, Critic
from tianshou.algorithm._update_helpers import (
    clear_grads,
    clip_grad_norm,
    exclusive_parameters,
    finite_loss_values,
    frozen,
    iterate_minibatches,
    training_view,
)
from tianshou.data import Batch

ALGORITHM_DIR = Path(tianshou.algorithm.__file__).parent


class TestFiniteLossValues:
    def test_reads_every_loss_in_order(self) -> None:
        values = finite_loss_values(
            "test", loss=torch.tensor(1.5), part=torch.tensor([2.0], dtype=torch.float16)
        )
        assert values == [1.5, 2.0]

    def test_names_each_non_finite_loss_and_the_context(self) -> None:
        with pytest.raises(FloatingPointError) as error:
            finite_loss_values(
                "the optimizer of Critic",
                loss=torch.tensor(float("nan")),
                vf_loss=torch.tensor(0.5),
                entropy=torch.tensor(float("inf")),
            )
        message = str(error.value)
        assert message.startswith("the optimizer of Critic: the loss is not finite")
        assert "loss=nan, vf_loss=0.5, entropy=inf" in message

    def test_refuses_a_non_scalar_loss(self) -> None:
        with pytest.raises(ValueError, match=r"per_sample must be a scalar loss.*\(3,\)"):
            finite_loss_values("test", per_sample=torch.ones(3))


class TestMinibatches:
    def test_training_view_keeps_only_update_keys(self) -> None:
        batch = Batch(obs=np.zeros((4, 2)), obs_next=np.ones((4, 2)), act=np.arange(4))
        view = training_view(batch)
        assert set(view.keys()) == {"obs", "act"}

    def test_training_view_refuses_an_empty_batch(self) -> None:
        with pytest.raises(ValueError, match="empty batch"):
            training_view(Batch(obs=np.zeros((0, 2))))

    def test_every_row_once_per_pass_and_short_last_merged(self) -> None:
        view = Batch(act=np.arange(7))
        batches = list(iterate_minibatches(view, batch_size=3, repeat=2))
        assert [len(b) for b in batches] == [3, 4, 3, 4]
        for first, second in ((0, 1), (2, 3)):
            rows = np.concatenate([batches[first].act, batches[second].act])
            assert sorted(rows) == list(range(7))

    @pytest.mark.parametrize("batch_size", [0, None])
    def test_zero_or_none_is_one_minibatch_of_everything_per_pass(
        self, batch_size: int | None
    ) -> None:
        batches = list(iterate_minibatches(Batch(act=np.arange(7)), batch_size, repeat=2))
        assert [sorted(b.act) for b in batches] == [list(range(7))] * 2

    @pytest.mark.parametrize(("size", "batch_size"), [(10, 4), (12, 4), (3, 4), (64, 10)])
    def test_same_rows_in_the_same_order_as_batch_split(self, size: int, batch_size: int) -> None:
        view = Batch(act=np.arange(size), obs=np.arange(2 * size).reshape(size, 2))
        np.random.seed(3)
        ours = list(iterate_minibatches(view, batch_size, repeat=2))
        np.random.seed(3)
        split = [b for _ in range(2) for b in view.split(batch_size, merge_last=True)]
        assert [b.act.tolist() for b in ours] == [b.act.tolist() for b in split]
        assert all(np.array_equal(a.obs, b.obs) for a, b in zip(ours, split, strict=True))

    def test_training_view_moves_array_observations_to_the_device_once(self) -> None:
        obs = np.arange(8, dtype=np.float32).reshape(4, 2)
        view = training_view(Batch(obs=obs, act=np.arange(4)), torch.device("cpu"))
        assert isinstance(view.obs, torch.Tensor)
        assert view.obs.dtype == torch.float32
        assert torch.equal(view.obs, torch.as_tensor(obs))
        nested = Batch(obs=Batch(obs=obs, mask=np.ones((4, 3), dtype=bool)), act=np.arange(4))
        assert isinstance(training_view(nested, torch.device("cpu")).obs, Batch)
        assert isinstance(training_view(Batch(obs=obs)).obs, np.ndarray)

    @pytest.mark.parametrize(("batch_size", "repeat"), [(-1, 1), (2, 0)])
    def test_bad_arguments(self, batch_size: int, repeat: int) -> None:
        with pytest.raises(ValueError):
            list(iterate_minibatches(Batch(act=np.arange(4)), batch_size, repeat))


def test_frozen_restores_requires_grad_and_skips_gradients() -> None:
    critic = Critic()
    already_frozen = critic.net[2].bias
    already_frozen.requires_grad_(False)
    act = torch.zeros(2, 2, requires_grad=True)
    with frozen(list(critic.parameters())):
        critic(torch.zeros(2, OBS_DIM), act).sum().backward()
    assert act.grad is not None
    assert all(p.grad is None for p in critic.parameters())
    assert critic.net[0].weight.requires_grad and not already_frozen.requires_grad


def test_exclusive_parameters_skips_shared_ones() -> None:
    shared = nn.Linear(2, 2)
    actor, critic = nn.Sequential(shared), nn.Sequential(shared, nn.Linear(2, 1))
    params = exclusive_parameters([critic, critic], actor)
    assert [p.shape for p in params] == [torch.Size([1, 2]), torch.Size([1])]


def _imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    modules = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            modules.add(node.module)
        elif isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
    return modules


@pytest.mark.parametrize(
    "path", sorted(ALGORITHM_DIR.rglob("*.py")), ids=lambda p: str(p.relative_to(ALGORITHM_DIR))
)
def test_algorithm_code_imports_data_from_the_defining_modules(path: Path) -> None:
    # ``tianshou.data`` loads the collectors, which import the algorithm layer: a cycle
    assert "tianshou.data" not in _imported_modules(path)


@pytest.mark.parametrize("module", ["dqn", "ddpg", "td3", "sac", "a2c", "ppo"])
def test_algorithms_take_shared_helpers_from_the_helpers_module(module: str) -> None:
    imported = _imported_modules(ALGORITHM_DIR / "modelfree" / f"{module}.py")
    assert "tianshou.algorithm._update_helpers" in imported or module == "dqn"
    if module in ("dqn", "ddpg", "td3", "sac"):
        assert "tianshou.algorithm.modelfree.reinforce" not in imported


class TestClipGradNorm:
    @staticmethod
    def two_networks_with_equal_grads(dtype: torch.dtype, scale: float) -> tuple[nn.Module, ...]:
        torch.manual_seed(0)
        first = nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 2)).to(dtype)
        second = nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 2)).to(dtype)
        second.load_state_dict(first.state_dict())
        obs = torch.randn(4, 5, dtype=dtype)
        for net in (first, second):
            (net(obs).square().sum() * scale).backward()
        return first, second

    @pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
    @pytest.mark.parametrize("scale", [100.0, 1e-4])  # clipped, and left as it is
    def test_equals_torchs_clipping_exactly(self, dtype: torch.dtype, scale: float) -> None:
        ours, theirs = self.two_networks_with_equal_grads(dtype, scale)
        clip_grad_norm(list(ours.parameters()), 0.5)
        nn.utils.clip_grad_norm_(theirs.parameters(), 0.5)
        for mine, reference in zip(ours.parameters(), theirs.parameters(), strict=True):
            assert mine.grad is not None and reference.grad is not None
            assert torch.equal(mine.grad, reference.grad)
        clipped_norm = torch.linalg.vector_norm(
            torch.stack([p.grad.norm() for p in ours.parameters() if p.grad is not None])
        )
        assert clipped_norm <= 0.5 + 1e-5

    def test_mixed_dtypes_and_missing_grads(self) -> None:
        single = nn.Parameter(torch.ones(3))
        double = nn.Parameter(torch.ones(3, dtype=torch.float64))
        without_grad = nn.Parameter(torch.ones(2))
        single.grad = torch.full((3,), 10.0)
        double.grad = torch.full((3,), 10.0, dtype=torch.float64)
        clip_grad_norm([single, double, without_grad], 1.0)
        expected = 10.0 / (np.sqrt(600.0) + 1e-6)
        np.testing.assert_allclose(single.grad.numpy(), expected, rtol=1e-6)
        np.testing.assert_allclose(double.grad.numpy(), expected, rtol=1e-6)
        assert without_grad.grad is None
        clip_grad_norm([without_grad], 1.0)  # nothing to clip


class TestClearGrads:
    def test_sets_every_gradient_of_every_group_to_none(self) -> None:
        first, second = nn.Linear(3, 2), nn.Linear(2, 1)
        optimizer = torch.optim.Adam(
            [{"params": first.parameters()}, {"params": second.parameters(), "lr": 0.1}]
        )
        second(first(torch.ones(4, 3))).sum().backward()
        assert all(p.grad is not None for p in [*first.parameters(), *second.parameters()])
        clear_grads(optimizer)
        assert all(p.grad is None for p in [*first.parameters(), *second.parameters()])

    def test_an_overridden_zero_grad_is_called(self) -> None:
        calls: list[bool] = []

        class CountingSGD(torch.optim.SGD):
            def zero_grad(self, set_to_none: bool = True) -> None:
                calls.append(set_to_none)
                super().zero_grad(set_to_none)

        layer = nn.Linear(2, 1)
        layer(torch.ones(1, 2)).sum().backward()
        clear_grads(CountingSGD(layer.parameters(), lr=0.1))
        assert calls == [True]
        assert layer.weight.grad is None
