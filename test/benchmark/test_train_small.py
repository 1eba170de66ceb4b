"""``benchmark/train_small.py`` and ``benchmark/bare_small.py``: the bare loop does the work
the library's trainer does (the same env steps and the same number of gradient steps), and its
bare DQN bootstraps n-step returns."""

import numpy as np
import pytest
import torch

from benchmark.bare_small import DQN_GAMMA, BareContinuous, BareDQN, Ring
from benchmark.train_small import CONFIGS, bare_run, library_run


@pytest.mark.parametrize("name", list(CONFIGS))
def test_bare_loop_takes_the_library_s_env_steps_and_gradient_steps(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    updates = {"bare": 0}
    for learner in (BareDQN, BareContinuous):
        original = learner.update

        def counted(self: object, batch_size: int, original=original) -> None:
            updates["bare"] += 1
            original(self, batch_size)

        monkeypatch.setattr(learner, "update", counted)
    env_steps = 2 * CONFIGS[name].steps_per_collect
    assert bare_run(name, env_steps)() == env_steps
    config = CONFIGS[name]
    assert updates["bare"] == round(env_steps * config.updates_per_step)
    assert library_run(name, env_steps)() == env_steps


def test_bare_dqn_sums_rewards_up_to_the_episode_end_and_bootstraps_after() -> None:
    ring = Ring(num_envs=1, capacity=8, obs_dim=4, act_dim=None)
    for t in range(6):
        done = np.array([t == 1])
        terminated = np.array([t in (1, 5)])
        obs = np.full((1, 4), t, np.float32)
        ring.add(obs, np.zeros(1, np.int64), np.array([t + 1.0], np.float32), terminated, done, obs)
    learner = BareDQN((8,), ring)
    for net in (learner.net, learner.target):
        for param in net.parameters():
            torch.nn.init.zeros_(param)
        net[-1].bias.data[:] = 10.0  # every Q-value is 10
    g = DQN_GAMMA
    steps = torch.arange(6)
    expected = [
        1 + g * 2,  # the episode terminates at step 1: no bootstrap
        2,
        3 + g * 4 + g**2 * 5 + g**3 * 10,
        4 + g * 5 + g**2 * 6,  # terminates at step 5
        5 + g * 6,
        6,
    ]
    targets = learner.td_target(torch.zeros(6, dtype=torch.int64), steps)
    assert torch.allclose(targets, torch.tensor(expected))
