"""Tests of the twin-critic base and TD3: delayed actor updates, target smoothing, twin critics."""

import numpy as np
import pytest
import torch

from test.algorithm.modelfree.test_ddpg import make_policy
from test.algorithm.modelfree.test_sac import Critic, filled_buffer
from tianshou.algorithm.modelfree.td3 import TD3, TD3TrainingStats, fresh_copy
from tianshou.algorithm.optim import TorchOptimizerFactory
from tianshou.data import Batch
from tianshou.utils.torch_utils import policy_within_training_step

SGD = TorchOptimizerFactory(torch.optim.SGD, lr=0.05)


def make_td3(**kwargs) -> TD3:
    policy = make_policy()
    torch.manual_seed(1)
    return TD3(
        policy=policy,
        policy_optim=SGD,
        critic=Critic(),
        critic_optim=SGD,
        critic2=Critic(),
        **kwargs,
    )


def test_actor_and_targets_update_every_update_actor_freq_steps() -> None:
    td3 = make_td3(update_actor_freq=2)
    buffer = filled_buffer()
    changed = []
    for _ in range(4):
        actor_before = [p.detach().clone() for p in td3.policy.parameters()]
        with policy_within_training_step(td3.policy):
            stats = td3.update(buffer, 8)
        changed.append(
            any(
                not torch.equal(a, b)
                for a, b in zip(actor_before, td3.policy.parameters(), strict=True)
            )
        )
        assert isinstance(stats, TD3TrainingStats)
    assert changed == [True, False, True, False]


def test_a_resumed_run_keeps_the_phase_of_the_delayed_actor_updates() -> None:
    td3 = make_td3(update_actor_freq=2)
    buffer = filled_buffer()
    with policy_within_training_step(td3.policy):
        td3.update(buffer, 8)  # the actor steps; the next update only steps the critics
    resumed = make_td3(update_actor_freq=2)
    resumed.load_state_dict(td3.state_dict())
    actor_before = [p.detach().clone() for p in resumed.policy.parameters()]
    with policy_within_training_step(resumed.policy):
        resumed.update(buffer, 8)
    assert all(
        torch.equal(a, b) for a, b in zip(actor_before, resumed.policy.parameters(), strict=True)
    )


def test_target_is_the_min_of_the_twin_target_critics_at_smoothed_actions() -> None:
    td3 = make_td3(policy_noise=0.0)
    buffer = filled_buffer()
    batch, indices = buffer.sample(0)
    returns = td3._preprocess_batch(batch, buffer, indices).returns.flatten()
    with torch.no_grad():
        act_next = td3.actor_old(batch.obs_next)[0]
        q = torch.min(
            td3.critic_old(batch.obs_next, act_next), td3.critic2_old(batch.obs_next, act_next)
        ).flatten()
    not_done = 1.0 - torch.as_tensor(batch.terminated, dtype=torch.float32)
    expected = torch.as_tensor(batch.rew, dtype=torch.float32) + 0.99 * not_done * q
    assert torch.allclose(returns, expected, atol=1e-5)


def test_target_noise_is_clipped() -> None:
    td3 = make_td3(policy_noise=10.0, noise_clip=0.5)
    obs = Batch(obs=np.zeros((200, 3), np.float32), info=Batch())
    clean = td3.actor_old(obs.obs)[0]
    noisy = td3._target_q_compute_action(obs).act
    assert (noisy - clean).abs().max().item() == pytest.approx(0.5)


def test_critics_are_trained_with_one_backward_pass_each_step() -> None:
    td3 = make_td3()
    critic2_before = [p.detach().clone() for p in td3.critic2.parameters()]
    with policy_within_training_step(td3.policy):
        td3.update(filled_buffer(), 8)
    assert all(
        not torch.equal(a, b) for a, b in zip(critic2_before, td3.critic2.parameters(), strict=True)
    )
    assert all(p.requires_grad for p in td3.critic.parameters())


def test_fresh_copy_has_new_parameters() -> None:
    critic = Critic()
    clone = fresh_copy(critic)
    assert type(clone) is Critic
    assert not torch.equal(clone.net[0].weight, critic.net[0].weight)


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="update_actor_freq"):
        make_td3(update_actor_freq=0)
    with pytest.raises(ValueError, match="critic2"):
        critic = Critic()
        TD3(policy=make_policy(), policy_optim=SGD, critic=critic, critic_optim=SGD, critic2=critic)


@pytest.mark.parametrize("shared", [False, True], ids=["joint-backward", "shared-layers"])
def test_nan_critic_loss_leaves_every_parameter_intact(shared: bool) -> None:
    td3 = make_td3()
    if shared:
        td3.critic2.net[0] = td3.critic.net[0]
        td3._critics_share_parameters = True
    buffer = filled_buffer()
    buffer.rew[3] = np.nan
    before = [p.detach().clone() for p in td3.parameters()]
    with (
        policy_within_training_step(td3.policy),
        pytest.raises(FloatingPointError, match=r"not finite \(.*critic1?_loss=nan"),
    ):
        td3.update(buffer, 0)
    assert all(torch.equal(a, b) for a, b in zip(before, td3.parameters(), strict=True))
