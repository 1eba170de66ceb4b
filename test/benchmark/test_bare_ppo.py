"""The bare PPO of ``benchmark/bare_ppo.py`` does the library's work: started from the library's
weights on the same data with the same NumPy seed (which draws the minibatch order), it computes
the same losses and ends with the same parameters, update after update. This is what makes the
ratio of ``benchmark/update_rate_ppo.py`` a fair comparison."""

import dataclasses

import numpy as np
import pytest
import torch

from benchmark.bare_ppo import BarePPO
from benchmark.common import random_transitions
from benchmark.update_rate_ppo import (
    PPOConfig,
    bare_cartpole_run,
    bare_ppo,
    library_cartpole_run,
    library_ppo,
    library_update,
    load_weights,
    measure_cartpole,
)
from tianshou.algorithm import PPO
from tianshou.data import ReplayBuffer

OBS_DIM, ACT_DIM, SIZE = 5, 2, 200


@pytest.fixture(autouse=True)
def _one_thread():
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


def rollout() -> dict[str, np.ndarray]:
    """Random transitions with a termination at 30, a truncation at 90 and a running end."""
    data = random_transitions(SIZE, OBS_DIM, ACT_DIM, discrete=False, seed=1)
    data["terminated"][:] = False
    data["truncated"][:] = False
    data["terminated"][30] = data["truncated"][90] = True
    data["done"] = data["terminated"] | data["truncated"]
    return data


def library_parameters(library: PPO) -> list[torch.Tensor]:
    """The library's tensors in the bare order: actor body and mean head, log std, critic."""
    actor = library.policy.actor
    body = [p for p in actor.parameters() if p is not actor.sigma_param]
    return [*body, actor.sigma_param, *library.critic.parameters()]


def bare_parameters(bare: BarePPO) -> list[torch.Tensor]:
    assert bare.log_std is not None
    return [*bare.actor.parameters(), bare.log_std, *bare.critic.parameters()]


CONFIGS = {
    # the MuJoCo example's settings, on small networks; 200 rows in minibatches of 64 merge
    # the short last one
    "mujoco_example": PPOConfig(hidden=16, repeat=3),
    "normalised_value_clipped_entropy": PPOConfig(
        hidden=16,
        batch_size=50,
        repeat=2,
        advantage_normalization=True,
        recompute_advantage=False,
        value_clip=True,
        ent_coef=0.01,
        return_scaling=False,
        lr_decay_updates=4,
    ),
}


@pytest.mark.parametrize("torch_distributions", [True, False])
@pytest.mark.parametrize("name", list(CONFIGS))
def test_bare_ppo_matches_the_library(name: str, torch_distributions: bool) -> None:
    config = CONFIGS[name]
    torch.manual_seed(0)
    data = rollout()
    library = library_ppo(config, OBS_DIM, ACT_DIM)
    bare = bare_ppo(data, config, torch_distributions=torch_distributions)
    load_weights(bare, library)
    buffer = ReplayBuffer.from_data(**data)
    for update in range(3):
        np.random.seed(update)
        stats = library_update(library, buffer, config.batch_size, config.repeat)
        np.random.seed(update)
        ours = bare.update()
        assert len(ours["loss"]) == stats.gradient_steps
        for key, summary in [
            ("loss", stats.loss),
            ("clip_loss", stats.actor_loss),
            ("vf_loss", stats.vf_loss),
            ("ent_loss", stats.ent_loss),
        ]:
            assert ours[key].mean().item() == pytest.approx(summary.mean, rel=1e-4, abs=1e-6)
            assert ours[key].std(correction=0).item() == pytest.approx(
                summary.std, rel=1e-3, abs=1e-6
            )
    assert bare.ret_rms.var == pytest.approx(float(library.ret_rms.var), rel=1e-6)
    for ours_p, theirs in zip(bare_parameters(bare), library_parameters(library), strict=True):
        torch.testing.assert_close(ours_p, theirs.reshape(ours_p.shape), rtol=1e-4, atol=1e-5)
    library_lr = library.optim.torch_optimizer.param_groups[0]["lr"]
    assert bare.optim.param_groups[0]["lr"] == pytest.approx(library_lr)


def test_a_different_minibatch_order_gives_different_parameters() -> None:
    """The comparison above is sensitive: the order drawn from the seed matters."""
    config = dataclasses.replace(CONFIGS["mujoco_example"], repeat=1)
    torch.manual_seed(0)
    data = rollout()
    library = library_ppo(config, OBS_DIM, ACT_DIM)
    bare = bare_ppo(data, config)
    load_weights(bare, library)
    np.random.seed(0)
    library_update(library, ReplayBuffer.from_data(**data), config.batch_size, config.repeat)
    np.random.seed(1)
    bare.update()
    differences = [
        (ours - theirs.reshape(ours.shape)).abs().max().item()
        for ours, theirs in zip(bare_parameters(bare), library_parameters(library), strict=True)
    ]
    assert max(differences) > 1e-4


def test_categorical_bare_policy_agrees_with_both_evaluations() -> None:
    """The categorical path (the CartPole workload's) gives the same numbers either way."""
    torch.manual_seed(0)
    data = random_transitions(SIZE, OBS_DIM, 3, discrete=True, seed=2)
    config = dataclasses.replace(CONFIGS["normalised_value_clipped_entropy"], repeat=1)
    sides = [bare_ppo(data, config, num_actions=3, torch_distributions=t) for t in (True, False)]
    sides[1].actor.load_state_dict(sides[0].actor.state_dict())
    sides[1].critic.load_state_dict(sides[0].critic.state_dict())
    results = []
    for side in sides:
        np.random.seed(0)
        results.append(side.update())
    for key in ("loss", "clip_loss", "vf_loss", "ent_loss"):
        torch.testing.assert_close(results[0][key], results[1][key], rtol=1e-5, atol=1e-6)


def test_cartpole_workload_times_the_same_env_steps_on_both_sides() -> None:
    library_run, bare_run = library_cartpole_run(1), bare_cartpole_run(1)
    assert library_run() == bare_run() == 2048
    record = measure_cartpole(rounds=1, iterations=1, clock="cpu")
    assert record["env_steps_per_s"] > 0
    assert record["bare_env_steps_per_s"] > 0
