"""Tests of the opt-in compiled update (``Algorithm.compile_update``) against the eager update.

The fast tests compile with the ``aot_eager`` backend, which captures the same graphs (forward
and backward) as inductor but generates no code; the ``slow`` ones use inductor itself, whose
compilation takes tens of seconds on a small machine.
"""

import copy
import logging
import pickle
from collections.abc import Callable

import gymnasium as gym
import numpy as np
import pytest
import torch

from tianshou.algorithm.algorithm_base import Algorithm
from tianshou.algorithm.modelfree.ddpg import DDPG, ContinuousDeterministicPolicy
from tianshou.algorithm.modelfree.dqn import DQN, DiscreteQLearningPolicy
from tianshou.algorithm.modelfree.ppo import PPO
from tianshou.algorithm.modelfree.reinforce import ProbabilisticActorPolicy
from tianshou.algorithm.modelfree.sac import SAC, AutoAlpha, SACPolicy
from tianshou.algorithm.modelfree.td3 import TD3
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import Batch, PrioritizedReplayBuffer, ReplayBuffer
from tianshou.utils.net.common import Net
from tianshou.utils.net.continuous import (
    ContinuousActorDeterministic,
    ContinuousActorProbabilistic,
    ContinuousCritic,
)
from tianshou.utils.torch_utils import policy_within_training_step

OBS_DIM, ACT_DIM, NUM_ACTIONS = 3, 2, 4
HIDDEN = [16, 16]
BOX = gym.spaces.Box(-1.0, 1.0, shape=(ACT_DIM,))


def critic() -> ContinuousCritic:
    return ContinuousCritic(
        preprocess_net=Net(
            state_shape=OBS_DIM, action_shape=ACT_DIM, hidden_sizes=HIDDEN, concat=True
        )
    )


def build_sac(cls: type[SAC] = SAC, **kwargs) -> Algorithm:
    actor = ContinuousActorProbabilistic(
        preprocess_net=Net(state_shape=OBS_DIM, hidden_sizes=HIDDEN),
        action_shape=ACT_DIM,
        unbounded=True,
        conditioned_sigma=True,
    )
    return cls(
        policy=SACPolicy(actor=actor, action_space=BOX),
        policy_optim=AdamOptimizerFactory(lr=1e-2),
        critic=critic(),
        critic_optim=AdamOptimizerFactory(lr=1e-2),
        **{"alpha": AutoAlpha(-float(ACT_DIM), 0.0, AdamOptimizerFactory(lr=1e-2)), **kwargs},
    )


def build_td3(**kwargs) -> Algorithm:
    actor = ContinuousActorDeterministic(
        preprocess_net=Net(state_shape=OBS_DIM, hidden_sizes=HIDDEN), action_shape=ACT_DIM
    )
    return TD3(
        policy=ContinuousDeterministicPolicy(actor=actor, action_space=BOX),
        policy_optim=AdamOptimizerFactory(lr=1e-2),
        critic=critic(),
        critic_optim=AdamOptimizerFactory(lr=1e-2),
        **{"update_actor_freq": 2, **kwargs},
    )


def build_dqn(**kwargs) -> Algorithm:
    model = Net(state_shape=OBS_DIM, action_shape=NUM_ACTIONS, hidden_sizes=HIDDEN)
    return DQN(
        policy=DiscreteQLearningPolicy(model=model, action_space=gym.spaces.Discrete(NUM_ACTIONS)),
        optim=AdamOptimizerFactory(lr=1e-2),
        **{"target_update_freq": 3, "huber_loss_delta": 1.0, **kwargs},
    )


def gaussian(loc_scale: tuple[torch.Tensor, torch.Tensor]) -> torch.distributions.Distribution:
    return torch.distributions.Independent(torch.distributions.Normal(*loc_scale), 1)


def build_ppo(**kwargs) -> Algorithm:
    actor = ContinuousActorProbabilistic(
        preprocess_net=Net(state_shape=OBS_DIM, hidden_sizes=HIDDEN), action_shape=ACT_DIM
    )
    return PPO(
        policy=ProbabilisticActorPolicy(actor=actor, dist_fn=gaussian, action_space=BOX),
        critic=ContinuousCritic(preprocess_net=Net(state_shape=OBS_DIM, hidden_sizes=HIDDEN)),
        optim=AdamOptimizerFactory(lr=1e-2),
        **{"max_grad_norm": 0.5, **kwargs},
    )


BUILDERS: dict[str, Callable[[], Algorithm]] = {
    "sac": build_sac,
    "td3": build_td3,
    "dqn": build_dqn,
}


def filled_buffer(name: str, prioritized: bool = False, size: int = 200) -> ReplayBuffer:
    """``size`` random transitions of one long episode, actions of the algorithm's space."""
    rng = np.random.default_rng(0)
    buffer = (
        PrioritizedReplayBuffer(size, alpha=0.6, beta=0.4) if prioritized else ReplayBuffer(size)
    )
    for step in range(size):
        act = (
            rng.integers(NUM_ACTIONS)
            if name == "dqn"
            else rng.uniform(-1, 1, ACT_DIM).astype(np.float32)
        )
        buffer.add(
            Batch(
                obs=rng.normal(size=OBS_DIM).astype(np.float32),
                act=act,
                rew=float(rng.normal()),
                terminated=step % 50 == 49,
                truncated=False,
                obs_next=rng.normal(size=OBS_DIM).astype(np.float32),
                info={},
            )
        )
    return buffer


def run_updates(
    algorithm: Algorithm, buffer: ReplayBuffer, sizes: list[int]
) -> list[dict[str, float]]:
    """One update per sample size, from fixed numpy and torch seeds; the losses of each."""
    np.random.seed(0)
    torch.manual_seed(0)
    with policy_within_training_step(algorithm.policy):
        return [algorithm.update(buffer, size).get_loss_stats_dict() for size in sizes]  # type: ignore[attr-defined]


def eager_and_compiled(
    name: str, build_kwargs: dict | None = None, **options
) -> tuple[Algorithm, Algorithm]:
    torch.manual_seed(0)
    eager = BUILDERS[name](**(build_kwargs or {}))
    compiled = copy.deepcopy(eager)
    compiled.compile_update(**options)
    return eager, compiled


def assert_same_state(a: Algorithm, b: Algorithm, rtol: float, atol: float) -> None:
    state_a, state_b = a.state_dict(), b.state_dict()
    assert state_a.keys() == state_b.keys()
    for key, value in state_a.items():
        if isinstance(value, torch.Tensor):
            torch.testing.assert_close(state_b[key], value, rtol=rtol, atol=atol, msg=key)
    for opt_a, opt_b in zip(a._optimizers, b._optimizers, strict=True):
        for group_a, group_b in zip(
            opt_a.torch_optimizer.state.values(), opt_b.torch_optimizer.state.values(), strict=True
        ):
            for key in group_a:
                torch.testing.assert_close(group_b[key], group_a[key], rtol=rtol, atol=atol)


def assert_same_losses(a: list[dict[str, float]], b: list[dict[str, float]], rtol: float) -> None:
    assert len(a) == len(b)
    for losses_a, losses_b in zip(a, b, strict=True):
        assert losses_a.keys() == losses_b.keys()
        for key, value in losses_a.items():
            assert losses_b[key] == pytest.approx(value, rel=rtol, abs=1e-5), key


@pytest.mark.parametrize("name", list(BUILDERS))
@pytest.mark.parametrize("prioritized", [False, True])
def test_traced_update_equals_the_eager_update(name: str, prioritized: bool) -> None:
    eager, compiled = eager_and_compiled(name, backend="aot_eager")
    buffer = filled_buffer(name, prioritized)
    sizes = [32] * 5
    eager_losses = run_updates(eager, buffer, sizes)
    buffer = filled_buffer(name, prioritized)
    compiled_losses = run_updates(compiled, buffer, sizes)
    assert_same_losses(eager_losses, compiled_losses, rtol=1e-5)
    assert_same_state(eager, compiled, rtol=1e-5, atol=1e-6)
    assert compiled._update_compiler is not None
    assert compiled._update_compiler.num_compiled >= 1
    assert compiled._update_compiler.compile_seconds > 0


@pytest.mark.parametrize(
    ("name", "build_kwargs"),
    [
        ("sac", {"alpha": 0.1}),  # a fixed coefficient: a Python float in the graphs
        ("td3", {"policy_noise": 0.0, "update_actor_freq": 1}),  # no target smoothing
        ("dqn", {"target_update_freq": 0, "huber_loss_delta": None}),  # no target network
        ("dqn", {"is_double": False}),
    ],
)
def test_traced_update_equals_the_eager_update_in_other_configurations(
    name: str, build_kwargs: dict
) -> None:
    eager, compiled = eager_and_compiled(name, build_kwargs, backend="aot_eager")
    sizes = [32] * 3
    eager_losses = run_updates(eager, filled_buffer(name), sizes)
    compiled_losses = run_updates(compiled, filled_buffer(name), sizes)
    assert_same_losses(eager_losses, compiled_losses, rtol=1e-5)
    assert_same_state(eager, compiled, rtol=1e-5, atol=1e-6)


def run_ppo_update(algorithm: Algorithm) -> dict[str, float]:
    """One PPO update: 2 passes over 100 transitions in minibatches of 32 (the last one, merged
    with the 4 left over, has 36: two shapes)."""
    np.random.seed(0)
    torch.manual_seed(0)
    with policy_within_training_step(algorithm.policy):
        stats = algorithm.update(filled_buffer("ppo", size=100), 32, 2)  # type: ignore[call-arg]
    return stats.get_loss_stats_dict()


@pytest.mark.parametrize(
    "build_kwargs", [{}, {"value_clip": True, "dual_clip": 3.0, "ent_coef": 0.0}]
)
def test_traced_ppo_update_equals_the_eager_update(build_kwargs: dict) -> None:
    torch.manual_seed(0)
    eager = build_ppo(**build_kwargs)
    compiled = copy.deepcopy(eager)
    compiler = compiled.compile_update(backend="aot_eager")
    assert_same_losses([run_ppo_update(eager)], [run_ppo_update(compiled)], rtol=1e-5)
    assert_same_state(eager, compiled, rtol=1e-5, atol=1e-6)
    assert compiler.num_compiled == 2


@pytest.mark.slow
def test_inductor_ppo_update_equals_the_eager_update() -> None:
    torch.manual_seed(0)
    eager = build_ppo()
    compiled = copy.deepcopy(eager)
    compiled.compile_update()
    assert_same_losses([run_ppo_update(eager)], [run_ppo_update(compiled)], rtol=1e-4)
    assert_same_state(eager, compiled, rtol=1e-4, atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(BUILDERS))
def test_inductor_update_equals_the_eager_update(name: str) -> None:
    eager, compiled = eager_and_compiled(name)
    sizes = [32] * 4
    eager_losses = run_updates(eager, filled_buffer(name), sizes)
    compiled_losses = run_updates(compiled, filled_buffer(name), sizes)
    # inductor fuses and reorders float operations: equal within float tolerance, not bitwise
    assert_same_losses(eager_losses, compiled_losses, rtol=1e-4)
    assert_same_state(eager, compiled, rtol=1e-4, atol=1e-5)


def test_the_update_is_eager_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args, **kwargs):
        raise AssertionError("torch.compile was called without compile_update")

    monkeypatch.setattr(torch, "compile", refuse)
    for name, build in BUILDERS.items():
        algorithm = build()
        assert algorithm._update_compiler is None
        run_updates(algorithm, filled_buffer(name), [16])


def test_a_new_shape_is_compiled_until_max_shapes_then_runs_eagerly(caplog) -> None:
    eager, compiled = eager_and_compiled("dqn", backend="aot_eager", max_shapes=2)
    sizes = [32, 32, 16, 8, 8, 32]
    eager_losses = run_updates(eager, filled_buffer("dqn"), sizes)
    with caplog.at_level(logging.INFO, logger="tianshou.algorithm.compiled_update"):
        compiled_losses = run_updates(compiled, filled_buffer("dqn"), sizes)
    assert_same_losses(eager_losses, compiled_losses, rtol=1e-5)
    assert_same_state(eager, compiled, rtol=1e-5, atol=1e-6)
    compiler = compiled._update_compiler
    # two shapes each of the target computation and the TD-loss step
    assert compiler is not None and compiler.num_compiled == 4
    compiled_lines = [r for r in caplog.records if "compiled the td_loss step" in r.message]
    eager_lines = [r for r in caplog.records if "run eagerly" in r.message]
    assert len(compiled_lines) == 2 and "(32, 3)" in compiled_lines[0].message
    assert "(16, 3)" in compiled_lines[1].message
    assert len(eager_lines) == 2 and all(r.levelno == logging.WARNING for r in eager_lines)


def test_a_non_finite_loss_is_refused_before_any_step() -> None:
    _, compiled = eager_and_compiled("sac", backend="aot_eager")
    buffer = filled_buffer("sac")
    run_updates(compiled, buffer, [32])
    buffer.rew[:] = np.nan
    before = copy.deepcopy(compiled.state_dict())
    with pytest.raises(FloatingPointError, match="critic1_loss=nan"):
        run_updates(compiled, buffer, [32])
    for key, value in before.items():
        if isinstance(value, torch.Tensor):
            assert torch.equal(compiled.state_dict()[key], value), key


def test_checkpoints_move_between_eager_and_compiled_algorithms() -> None:
    eager, compiled = eager_and_compiled("td3", backend="aot_eager")
    run_updates(compiled, filled_buffer("td3"), [32, 32])
    eager.load_state_dict(compiled.state_dict())
    assert_same_state(eager, compiled, rtol=0, atol=0)
    restored = pickle.loads(pickle.dumps(compiled))
    assert restored._update_compiler.num_compiled == 0
    sizes = [32, 32]
    assert_same_losses(
        run_updates(eager, filled_buffer("td3"), sizes),
        run_updates(restored, filled_buffer("td3"), sizes),
        rtol=1e-5,
    )
    assert restored._update_compiler.num_compiled == 3  # target, critics, actor


def test_unsupported_algorithms_and_options_are_refused() -> None:
    actor = ContinuousActorDeterministic(
        preprocess_net=Net(state_shape=OBS_DIM, hidden_sizes=HIDDEN), action_shape=ACT_DIM
    )
    ddpg = DDPG(
        policy=ContinuousDeterministicPolicy(actor=actor, action_space=BOX),
        policy_optim=AdamOptimizerFactory(),
        critic=critic(),
        critic_optim=AdamOptimizerFactory(),
    )
    with pytest.raises(NotImplementedError, match="DDPG has no compiled update"):
        ddpg.compile_update()

    class MySAC(SAC):  # a subclass may change the losses: it must declare support itself
        pass

    with pytest.raises(NotImplementedError, match="MySAC"):
        build_sac(MySAC).compile_update()
    sac = build_sac()
    with pytest.raises(ValueError, match="CUDA device"):
        sac.compile_update(cuda_graphs=True)
    with pytest.raises(ValueError, match="'inductor' backend"):
        sac.compile_update(backend="aot_eager", mode="max-autotune")
    with pytest.raises(ValueError, match="mode must be"):
        sac.compile_update(mode="reduce-overhead")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_shapes"):
        sac.compile_update(max_shapes=0)
    assert sac._update_compiler is None
