"""Tests of DiscreteSACPolicy and the discrete SAC update: the exact expectations over actions
(target value and actor loss) against per-action loops, the automatic entropy tuning, learning on
CartPole-v1 and determinism."""

import copy
import math

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn
from torch.distributions import Categorical

from tianshou.algorithm.modelfree.discrete_sac import (
    DiscreteSAC,
    DiscreteSACPolicy,
    DiscreteSACTrainingStats,
)
from tianshou.algorithm.modelfree.sac import Alpha, AutoAlpha, FixedAlpha
from tianshou.algorithm.optim import AdamOptimizerFactory, TorchOptimizerFactory
from tianshou.data import (
    Batch,
    Collector,
    InfoStats,
    PrioritizedReplayBuffer,
    ReplayBuffer,
    VectorReplayBuffer,
)
from tianshou.env import DummyVectorEnv
from tianshou.trainer import OffPolicyTrainerParams
from tianshou.utils.determinism import TraceDeterminismTest, TraceLog, TraceLoggerContext
from tianshou.utils.net.common import Net
from tianshou.utils.net.discrete import DiscreteActor, DiscreteCritic
from tianshou.utils.torch_utils import policy_within_training_step

OBS_DIM = 3
NUM_ACTIONS = 3
SPACE = gym.spaces.Discrete(NUM_ACTIONS)
GAMMA = 0.9


class Actor(nn.Module):
    """Returns ``(logits, state)`` from a small MLP."""

    def __init__(self, num_actions: int = NUM_ACTIONS) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(OBS_DIM, 16), nn.ReLU(), nn.Linear(16, num_actions))

    def forward(self, obs, state=None, info=None):
        return self.net(torch.as_tensor(obs, dtype=torch.float32)), state


class Critic(nn.Module):
    """One Q-value per action from a small MLP over the observation."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(OBS_DIM, 16), nn.ReLU(), nn.Linear(16, NUM_ACTIONS))

    def forward(self, obs, state=None, info=None):
        return self.net(torch.as_tensor(obs, dtype=torch.float32))


def make_policy(**kwargs) -> DiscreteSACPolicy:
    torch.manual_seed(0)
    return DiscreteSACPolicy(actor=Actor(), action_space=SPACE, **kwargs)


def sgd(lr: float = 0.05) -> TorchOptimizerFactory:
    return TorchOptimizerFactory(torch.optim.SGD, lr=lr)


def make_sac(**kwargs) -> DiscreteSAC:
    policy = make_policy()
    torch.manual_seed(1)
    params = {"tau": 0.1, "gamma": GAMMA, "alpha": 0.2, **kwargs}
    return DiscreteSAC(
        policy=policy,
        policy_optim=sgd(),
        critic=Critic(),
        critic_optim=sgd(),
        critic2=Critic(),
        critic2_optim=sgd(),
        **params,
    )


def filled_buffer(buffer: ReplayBuffer | None = None, steps: int = 16) -> ReplayBuffer:
    """16 steps; episodes end at t = 4 (terminated), 9 (truncated) and 14 (terminated)."""
    buffer = buffer if buffer is not None else ReplayBuffer(32)
    rng = np.random.default_rng(0)
    for t in range(steps):
        buffer.add(
            Batch(
                obs=rng.normal(size=OBS_DIM).astype(np.float32),
                act=int(rng.integers(NUM_ACTIONS)),
                rew=float(rng.normal()),
                terminated=t % 10 == 4,
                truncated=t % 10 == 9,
                obs_next=rng.normal(size=OBS_DIM).astype(np.float32),
                info={},
            )
        )
    return buffer


def obs_batch(n: int = 6) -> Batch:
    return Batch(obs=np.linspace(-1, 1, n * OBS_DIM, dtype=np.float32).reshape(n, OBS_DIM))


def naive_soft_value(sac: DiscreteSAC, obs: np.ndarray, alpha: float) -> list[float]:
    """``sum_a pi(a|s) * (min(Q1', Q2')(s, a) - alpha * log pi(a|s))``, one state and action
    at a time."""
    values = []
    with torch.no_grad():
        for row in obs:
            logits = sac.policy.actor(row[None])[0][0]
            q1, q2 = sac.critic_old(row[None])[0], sac.critic2_old(row[None])[0]
            value = 0.0
            for a in range(NUM_ACTIONS):
                prob = math.exp(logits[a]) / sum(math.exp(x) for x in logits)
                value += prob * (min(float(q1[a]), float(q2[a])) - alpha * math.log(prob))
            values.append(value)
    return values


def naive_actor_loss(sac: DiscreteSAC, obs: np.ndarray, alpha: float) -> torch.Tensor:
    """``mean_s -(alpha * H(pi(.|s)) + sum_a pi(a|s) * min(Q1, Q2)(s, a))``, per state and
    action; differentiable in the actor's parameters only."""
    total = torch.zeros(())
    for row in obs:
        probs = torch.softmax(sac.policy.actor(row[None])[0][0], dim=-1)
        with torch.no_grad():
            q1, q2 = sac.critic(row[None])[0], sac.critic2(row[None])[0]
        for a in range(NUM_ACTIONS):
            soft_q = torch.min(q1[a], q2[a]) - alpha * torch.log(probs[a])
            total = total - probs[a] * soft_q
    return total / len(obs)


def naive_update(sac: DiscreteSAC, batch: Batch, buffer: ReplayBuffer, alpha: float) -> None:
    """One discrete SAC update with SGD(0.05), written out with loops (one-step returns)."""
    values = naive_soft_value(sac, batch.obs_next, alpha)
    targets = []
    for i in range(len(batch)):
        bootstrap = 0.0 if batch.terminated[i] else GAMMA * values[i]
        targets.append(float(batch.rew[i]) + bootstrap)
    for critic in (sac.critic, sac.critic2):
        critic.zero_grad()
        loss = torch.zeros(())
        for i, row in enumerate(batch.obs):
            loss = loss + (critic(row[None])[0][int(batch.act[i])] - targets[i]) ** 2
        (loss / len(batch)).backward()
        with torch.no_grad():
            for param in critic.parameters():
                param -= 0.05 * param.grad
    sac.policy.zero_grad()
    naive_actor_loss(sac, batch.obs, alpha).backward()
    with torch.no_grad():
        for param in sac.policy.parameters():
            param -= 0.05 * param.grad
        for source, target in ((sac.critic, sac.critic_old), (sac.critic2, sac.critic2_old)):
            for param, target_param in zip(source.parameters(), target.parameters(), strict=True):
                target_param.mul_(1 - sac.tau).add_(sac.tau * param)


class TestPolicy:
    def test_forward_returns_a_categorical_over_the_logits(self) -> None:
        policy = make_policy()
        with policy_within_training_step(policy):
            result = policy(obs_batch())
        logits, _ = policy.actor(obs_batch().obs)
        assert torch.equal(result.logits, logits)
        assert isinstance(result.dist, Categorical)
        assert torch.allclose(result.dist.probs, torch.softmax(logits, dim=-1))
        assert result.act.shape == (6,) and result.act.dtype == torch.long
        assert result.state is None

    def test_training_steps_sample_from_the_policy(self) -> None:
        policy = DiscreteSACPolicy(actor=Actor(), action_space=SPACE)
        with torch.no_grad():
            policy.actor.net[2].bias.copy_(torch.tensor([0.0, math.log(3.0), -30.0]))
            policy.actor.net[2].weight.zero_()
        torch.manual_seed(0)
        with policy_within_training_step(policy):
            act = policy(Batch(obs=np.zeros((4000, OBS_DIM), dtype=np.float32))).act
        counts = torch.bincount(act, minlength=NUM_ACTIONS).double() / 4000
        assert counts.tolist() == pytest.approx([0.25, 0.75, 0.0], abs=0.03)

    def test_deterministic_eval_takes_the_argmax_outside_training_steps(self) -> None:
        policy = make_policy()
        logits, _ = policy.actor(obs_batch().obs)
        assert torch.equal(policy(obs_batch()).act, logits.argmax(-1))
        sampling = make_policy(deterministic_eval=False)
        torch.manual_seed(0)
        acts = torch.stack([sampling(obs_batch()).act for _ in range(50)])
        assert len(acts.unique()) > 1

    def test_wrong_number_of_actions_names_the_shapes(self) -> None:
        policy = DiscreteSACPolicy(actor=Actor(num_actions=2), action_space=SPACE)
        with pytest.raises(ValueError, match=r"\(6, 2\).*\(batch_size, 3\)"):
            policy(obs_batch())

    def test_actor_must_return_a_pair(self) -> None:
        policy = DiscreteSACPolicy(actor=Actor(), action_space=SPACE)
        policy.actor.forward = lambda obs, state=None, info=None: torch.zeros(6, 3)  # type: ignore[method-assign]
        with pytest.raises(TypeError, match=r"\(logits, hidden_state\)"):
            policy(obs_batch())

    def test_continuous_space_is_rejected(self) -> None:
        with pytest.raises(ValueError, match=r"Discrete action space.*SACPolicy"):
            DiscreteSACPolicy(actor=Actor(), action_space=gym.spaces.Box(-1, 1, (2,)))


class TestExpectationOverActions:
    @pytest.mark.parametrize("alpha", [0.0, 0.2, 1.5])
    def test_target_soft_value_matches_a_per_action_loop(self, alpha: float) -> None:
        sac = make_sac(alpha=alpha)
        obs = obs_batch().obs
        with torch.no_grad():
            obs_b = Batch(obs=obs, info=Batch())
            value = sac._target_q_compute_value(obs_b, sac._target_q_compute_action(obs_b))
        assert value.shape == (6,)
        assert value.tolist() == pytest.approx(naive_soft_value(sac, obs, alpha), rel=1e-5)

    def test_targets_stop_at_terminal_steps_and_bootstrap_after_truncation(self) -> None:
        sac = make_sac()
        buffer = filled_buffer()
        batch, indices = buffer.sample(0)
        returns = sac._preprocess_batch(batch, buffer, indices).returns.flatten()
        values = naive_soft_value(sac, batch.obs_next, 0.2)
        for i in (0, 4, 9, 14):
            bootstrap = 0.0 if batch.terminated[i] else GAMMA * values[i]
            assert returns[i].item() == pytest.approx(batch.rew[i] + bootstrap, rel=1e-5), i
        assert returns[4].item() == pytest.approx(batch.rew[4], rel=1e-6)

    def test_n_step_targets_stop_where_the_episode_ends(self) -> None:
        sac = make_sac(n_step_return_horizon=3)
        buffer = filled_buffer()
        batch, indices = buffer.sample(0)
        returns = sac._preprocess_batch(batch, buffer, indices).returns.flatten()
        rew, values = buffer.rew, naive_soft_value(sac, buffer.obs_next, 0.2)
        # 0 -> 2 stays inside the episode; 3 crosses the terminal step 4; 8 hits the truncation
        expected = {
            0: rew[0] + GAMMA * rew[1] + GAMMA**2 * rew[2] + GAMMA**3 * values[2],
            3: rew[3] + GAMMA * rew[4],
            8: rew[8] + GAMMA * rew[9] + GAMMA**2 * values[9],
        }
        for i, value in expected.items():
            assert returns[i].item() == pytest.approx(value, rel=1e-5), i

    @pytest.mark.parametrize("alpha", [0.0, 0.3])
    def test_actor_loss_matches_a_per_action_loop(self, alpha: float) -> None:
        sac = make_sac(alpha=alpha)
        buffer = filled_buffer()
        batch, indices = buffer.sample(0)
        processed = sac._preprocess_batch(batch, buffer, indices)
        with policy_within_training_step(sac.policy):
            stats = sac._update_with_batch(processed)
        # the actor loss is computed after the critics' step, with those critics
        reference = make_sac(alpha=alpha)
        reference.critic.load_state_dict(sac.critic.state_dict())
        reference.critic2.load_state_dict(sac.critic2.state_dict())
        expected = naive_actor_loss(reference, batch.obs, alpha).item()
        assert stats.actor_loss == pytest.approx(expected, rel=1e-5)

    def test_update_matches_a_naive_reference(self) -> None:
        sac = make_sac()
        reference = copy.deepcopy(sac)
        buffer = filled_buffer()
        for _ in range(3):
            batch, _ = buffer.sample(0)
            with policy_within_training_step(sac.policy):
                stats = sac.update(buffer, 0)
            naive_update(reference, batch, buffer, alpha=0.2)
            assert isinstance(stats, DiscreteSACTrainingStats)
        for (name, mine), theirs in zip(
            sac.named_parameters(), reference.parameters(), strict=True
        ):
            assert torch.allclose(mine, theirs, atol=1e-5), name


class TestEntropyTuning:
    def test_alpha_loss_and_step_use_the_exact_entropy(self) -> None:
        target = 0.9
        sac = make_sac(alpha=AutoAlpha(target, math.log(0.5), sgd(0.1)))
        buffer = filled_buffer()
        batch, indices = buffer.sample(0)
        with torch.no_grad():
            entropy = Categorical(logits=sac.policy.actor(batch.obs)[0]).entropy().mean().item()
        processed = sac._preprocess_batch(batch, buffer, indices)
        with policy_within_training_step(sac.policy):
            stats = sac._update_with_batch(processed)
        # loss = -log_alpha * (target - H); d loss / d log_alpha = -(target - H)
        assert stats.alpha_loss == pytest.approx(-math.log(0.5) * (target - entropy), rel=1e-5)
        new_log_alpha = math.log(0.5) + 0.1 * (target - entropy)
        assert stats.alpha == pytest.approx(math.exp(new_log_alpha), rel=1e-5)
        assert sac.alpha.value == pytest.approx(stats.alpha)

    @pytest.mark.parametrize(("target", "grows"), [(math.log(NUM_ACTIONS), True), (0.0, False)])
    def test_alpha_grows_below_the_target_entropy_and_shrinks_above(
        self, target: float, grows: bool
    ) -> None:
        # the policy's entropy lies strictly between 0 and log(3), the uniform policy's
        sac = make_sac(alpha=AutoAlpha(target, 0.0, sgd(0.1)))
        with policy_within_training_step(sac.policy):
            stats = sac.update(filled_buffer(), 0)
        assert (stats.alpha > 1.0) is grows and stats.alpha != 1.0

    def test_the_actor_step_uses_alpha_before_its_update(self) -> None:
        auto = make_sac(alpha=AutoAlpha(5.0, math.log(0.2), sgd(1.0)))
        fixed = make_sac(alpha=0.2)
        buffer = filled_buffer()
        for sac in (auto, fixed):
            with policy_within_training_step(sac.policy):
                sac.update(buffer, 0)
        assert auto.alpha.value > 0.2 * math.e
        for mine, theirs in zip(auto.policy.parameters(), fixed.policy.parameters(), strict=True):
            assert torch.allclose(mine, theirs, atol=1e-6)

    def test_fixed_alpha_reports_no_alpha_loss(self) -> None:
        sac = make_sac(alpha=FixedAlpha(0.1))
        with policy_within_training_step(sac.policy):
            stats = sac.update(filled_buffer(), 4)
        assert stats.alpha == pytest.approx(0.1)
        assert stats.alpha_loss is None

    def test_a_user_defined_alpha_needs_only_value_and_update(self) -> None:
        class Halving(Alpha):
            def __init__(self) -> None:
                self.current = 0.5

            @property
            def value(self) -> float:
                return self.current

            def update(self, entropy: torch.Tensor) -> float:
                self.current *= 0.5
                return float(entropy.mean())

        sac = make_sac(alpha=Halving())
        with policy_within_training_step(sac.policy):
            stats = sac.update(filled_buffer(), 4)
        assert stats.alpha == 0.25
        assert stats.alpha_loss is not None and 0.0 < stats.alpha_loss < math.log(NUM_ACTIONS)

    def test_auto_alpha_and_its_optimizer_are_checkpointed(self) -> None:
        adam = AdamOptimizerFactory(lr=0.1)
        sac = make_sac(alpha=AutoAlpha(0.5, 0.0, adam))
        with policy_within_training_step(sac.policy):
            sac.update(filled_buffer(), 4)
        state = copy.deepcopy(sac.state_dict())
        assert "alpha._log_alpha" in state and len(state["_optimizers"]) == 4
        clone = make_sac(alpha=AutoAlpha(0.5, 0.0, adam))
        clone.load_state_dict(state)
        entropy = torch.full((4,), 0.1)
        assert clone.alpha.update(entropy) == pytest.approx(sac.alpha.update(entropy))
        assert clone.alpha.value == pytest.approx(sac.alpha.value, rel=1e-7)


class TestUpdate:
    def test_critic_losses_and_td_weights(self) -> None:
        sac = make_sac()
        buffer = filled_buffer()
        batch, indices = buffer.sample(0)
        processed = sac._preprocess_batch(batch, buffer, indices)
        returns = processed.returns.flatten()
        act = torch.as_tensor(batch.act)
        with torch.no_grad():
            q1 = sac.critic(batch.obs)[torch.arange(len(batch)), act]
            q2 = sac.critic2(batch.obs)[torch.arange(len(batch)), act]
        with policy_within_training_step(sac.policy):
            stats = sac._update_with_batch(processed)
        assert stats.critic1_loss == pytest.approx(float(((q1 - returns) ** 2).mean()), rel=1e-5)
        assert stats.critic2_loss == pytest.approx(float(((q2 - returns) ** 2).mean()), rel=1e-5)
        assert torch.allclose(processed.weight, ((q1 - returns) + (q2 - returns)) / 2, atol=1e-5)
        assert all(isinstance(v, float) for v in stats.get_loss_stats_dict().values())

    def test_an_update_samples_no_actions(self) -> None:
        """The targets and the actor loss are exact expectations over the actions, so an
        update draws nothing from torch's generator."""
        sac = make_sac()
        buffer = filled_buffer()
        state = torch.get_rng_state()
        with policy_within_training_step(sac.policy):
            sac.update(buffer, 8)
        assert torch.equal(torch.get_rng_state(), state)

    def test_importance_weights_scale_the_critic_loss(self) -> None:
        sac = make_sac()
        buffer = filled_buffer()
        batch, indices = buffer.sample(0)
        processed = sac._preprocess_batch(batch, buffer, indices)
        td, loss = sac._critic_td_loss(processed, sac.critic)
        weight = np.linspace(0.1, 2.0, len(batch))
        processed.weight = weight
        _, weighted = sac._critic_td_loss(processed, sac.critic)
        expected = (td.detach().pow(2) * torch.as_tensor(weight)).mean()
        assert weighted.item() == pytest.approx(expected.item(), rel=1e-5)
        assert weighted.item() != pytest.approx(loss.item())

    def test_prioritized_buffer_receives_td_errors(self) -> None:
        buffer = filled_buffer(PrioritizedReplayBuffer(32, alpha=0.6, beta=0.4))
        before = buffer.weight[np.arange(16)].copy()
        sac = make_sac()
        with policy_within_training_step(sac.policy):
            sac.update(buffer, 8)
        assert not np.allclose(buffer.weight[np.arange(16)], before)

    def test_polyak_update_of_the_target_critics(self) -> None:
        sac = make_sac()
        target_before = [p.detach().clone() for p in sac.critic_old.parameters()]
        with policy_within_training_step(sac.policy):
            sac.update(filled_buffer(), 4)
        for old, new, source in zip(
            target_before, sac.critic_old.parameters(), sac.critic.parameters(), strict=True
        ):
            assert torch.allclose(new, 0.9 * old + 0.1 * source, atol=1e-6)

    def test_default_critic2_is_an_independent_copy(self) -> None:
        critic = Critic()
        sac = DiscreteSAC(
            policy=make_policy(), policy_optim=sgd(), critic=critic, critic_optim=sgd()
        )
        assert type(sac.critic2) is Critic and sac.critic2 is not critic
        assert not torch.equal(sac.critic2.net[0].weight, critic.net[0].weight)

    def test_nan_loss_raises_and_leaves_the_actor_intact(self) -> None:
        sac = make_sac()
        buffer = filled_buffer()
        buffer.rew[3] = np.nan
        before = copy.deepcopy(sac.policy.state_dict())
        with (
            pytest.raises(FloatingPointError, match="not finite"),
            policy_within_training_step(sac.policy),
        ):
            sac.update(buffer, 0)
        for key, value in sac.policy.state_dict().items():
            assert torch.equal(value, before[key]), key

    @pytest.mark.parametrize(
        ("kwargs", "match"),
        [
            ({"tau": 1.5}, "tau"),
            ({"gamma": -0.1}, "gamma"),
            ({"n_step_return_horizon": 0}, "n_step"),
        ],
    )
    def test_bad_arguments(self, kwargs: dict, match: str) -> None:
        with pytest.raises(ValueError, match=match):
            make_sac(**kwargs)

    def test_bad_alpha_type(self) -> None:
        with pytest.raises(TypeError, match="alpha must be a float or an Alpha"):
            make_sac(alpha="auto")


def build_cartpole_sac(space: gym.Space, hidden: list[int]) -> DiscreteSAC:
    actor = DiscreteActor(
        preprocess_net=Net(state_shape=4, hidden_sizes=hidden),
        action_shape=2,
        softmax_output=False,
    )

    def critic() -> DiscreteCritic:
        return DiscreteCritic(preprocess_net=Net(state_shape=4, hidden_sizes=hidden), last_size=2)

    return DiscreteSAC(
        policy=DiscreteSACPolicy(actor=actor, action_space=space),
        policy_optim=AdamOptimizerFactory(lr=3e-4),
        critic=critic(),
        critic_optim=AdamOptimizerFactory(lr=1e-3),
        critic2=critic(),
        critic2_optim=AdamOptimizerFactory(lr=1e-3),
        tau=0.005,
        gamma=0.95,
        alpha=0.05,
        n_step_return_horizon=3,
    )


def train_cartpole(
    seed: int, max_epochs: int, epoch_num_steps: int, stop_at: float | None, num_envs: int = 10
) -> InfoStats:
    """Discrete SAC on CartPole-v1 (64x64 networks); stops once the test return reaches
    ``stop_at``."""
    np.random.seed(seed)
    torch.manual_seed(seed)
    task = "CartPole-v1"
    training_envs = DummyVectorEnv([lambda: gym.make(task) for _ in range(num_envs)])
    test_envs = DummyVectorEnv([lambda: gym.make(task) for _ in range(10)])
    training_envs.seed(seed)
    test_envs.seed(seed + 1)
    algorithm = build_cartpole_sac(training_envs.action_space[0], [64, 64])
    training_collector = Collector(
        algorithm, training_envs, VectorReplayBuffer(20000, num_envs), exploration_noise=True
    )
    test_collector = Collector(algorithm, test_envs)
    training_collector.reset()
    test_collector.reset()
    return algorithm.run_training(
        OffPolicyTrainerParams(
            training_collector=training_collector,
            test_collector=test_collector,
            max_epochs=max_epochs,
            epoch_num_steps=epoch_num_steps,
            collection_step_num_env_steps=10,
            test_step_num_episodes=10,
            batch_size=64,
            update_step_num_gradient_steps_per_sample=0.25,
            stop_fn=None if stop_at is None else (lambda reward: reward >= stop_at),
            show_progress=False,
            verbose=False,
        )
    )


@pytest.mark.slow
@pytest.mark.usefixtures("one_thread")
def test_discrete_sac_learns_cartpole() -> None:
    # seeds 0-5 reach 170 after 3,000 to 6,000 steps
    result = train_cartpole(seed=1, max_epochs=10, epoch_num_steps=1000, stop_at=170.0)
    assert result.best_reward >= 170.0
    assert result.train_step <= 10 * 1000


@pytest.mark.usefixtures("one_thread")
def test_training_twice_with_one_seed_leaves_the_same_trace(tmp_path) -> None:
    snapshot = TraceDeterminismTest(base_path=tmp_path)

    def traced_run() -> TraceLog:
        with TraceLoggerContext() as trace:
            train_cartpole(seed=3, max_epochs=1, epoch_num_steps=200, stop_at=None, num_envs=2)
        return trace.get_log()

    first = traced_run()
    snapshot.check(first, "discrete_sac", create_reference_result=True)
    result = snapshot.check(traced_run(), "discrete_sac")
    assert result.success and result.first_difference is None
    updates = first.filter_messages(required_messages=["update on"]).log_lines
    assert len(updates) >= 2
    assert len({line.rsplit(" ", 1)[1] for line in updates}) == len(updates)
