import copy
import io
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn

import tianshou.trainer
from tianshou.algorithm import Policy
from tianshou.algorithm.algorithm_base import (
    Algorithm,
    LaggedNetworkFullUpdateAlgorithmMixin,
    LaggedNetworkPolyakUpdateAlgorithmMixin,
    OfflineAlgorithm,
    OffPolicyAlgorithm,
    OffPolicyWrapperAlgorithm,
    OnPolicyAlgorithm,
    OnPolicyWrapperAlgorithm,
    RandomActionPolicy,
    TrainingStats,
    step_jointly,
)
from tianshou.algorithm.optim import (
    AdamOptimizerFactory,
    LRSchedulerFactoryLinear,
    TorchOptimizerFactory,
)
from tianshou.data import Batch, PrioritizedReplayBuffer, ReplayBuffer, VectorReplayBuffer
from tianshou.utils.torch_utils import policy_within_training_step


class LinearPolicy(Policy):
    """A deterministic policy whose raw action is the observation times a fixed weight."""

    def __init__(self, action_space: gym.Space, weight: float = 1.0, **kwargs: Any) -> None:
        super().__init__(action_space=action_space, **kwargs)
        self.weight = weight

    def forward(self, batch: Batch, state: Any = None, **kwargs: Any) -> Batch:
        return Batch(act=torch.as_tensor(batch.obs, dtype=torch.float32) * self.weight)


BOX = gym.spaces.Box(low=np.array([0.0, -2.0]), high=np.array([10.0, 2.0]))


def test_action_type_follows_the_space() -> None:
    assert LinearPolicy(gym.spaces.Discrete(3)).action_type == "discrete"
    assert LinearPolicy(gym.spaces.MultiDiscrete([2, 3])).action_type == "discrete"
    assert LinearPolicy(BOX).action_type == "continuous"


def test_bad_configuration_is_rejected() -> None:
    with pytest.raises(ValueError, match="action_bound_method"):
        LinearPolicy(BOX, action_bound_method="sigmoid")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="Box"):
        LinearPolicy(gym.spaces.Discrete(3), action_scaling=True)
    with pytest.raises(ValueError, match="unsupported action space"):
        LinearPolicy(gym.spaces.Text(5))


def test_map_action_clips_then_scales() -> None:
    policy = LinearPolicy(BOX, action_scaling=True, action_bound_method="clip")
    raw = np.array([[-1.0, 1.0], [0.0, 0.5], [3.0, -7.0]])
    mapped = policy.map_action(raw)
    np.testing.assert_allclose(mapped, [[0.0, 2.0], [5.0, 1.0], [10.0, -2.0]])


def test_map_action_tanh_bound() -> None:
    policy = LinearPolicy(BOX, action_scaling=True, action_bound_method="tanh")
    raw = np.array([[0.3, -0.4]])
    expected = BOX.low + (BOX.high - BOX.low) * (np.tanh(raw) + 1) / 2
    np.testing.assert_allclose(policy.map_action(raw), expected)


@pytest.mark.parametrize("bound", ["clip", "tanh", None])
def test_map_action_inverse_round_trip(bound: Any) -> None:
    policy = LinearPolicy(BOX, action_scaling=True, action_bound_method=bound)
    raw = np.array([[-0.9, 0.2], [0.5, 0.99]])
    np.testing.assert_allclose(policy.map_action_inverse(policy.map_action(raw)), raw, atol=1e-6)


def test_scaling_without_bounding_rejects_out_of_range_actions() -> None:
    policy = LinearPolicy(BOX, action_scaling=True, action_bound_method=None)
    with pytest.raises(ValueError, match=r"\[-1, 1\]"):
        policy.map_action(np.array([[2.0, 0.0]]))


def test_discrete_actions_pass_through_as_numpy() -> None:
    policy = LinearPolicy(gym.spaces.Discrete(4), action_bound_method=None)
    mapped = policy.map_action(torch.tensor([1, 3]))
    assert isinstance(mapped, np.ndarray)
    np.testing.assert_array_equal(mapped, [1, 3])


def test_compute_action_on_one_observation() -> None:
    policy = LinearPolicy(BOX, weight=2.0, action_scaling=True)
    act = policy.compute_action(np.array([0.25, -3.0]))
    assert act.shape == (2,)
    np.testing.assert_allclose(act, [7.5, -2.0])


def test_compute_action_is_what_a_collector_sends_to_the_env() -> None:
    # no clipping beyond map_action: without bounding or scaling the raw action passes through
    policy = LinearPolicy(BOX, weight=10.0, action_bound_method=None)
    act = policy.compute_action([0.5, 1.0])
    assert isinstance(act, np.ndarray) and act.dtype == np.float32
    np.testing.assert_allclose(act, [5.0, 10.0])


class EchoDiscretePolicy(Policy):
    """Acts with the observation's first entry (or ``obs["pick"]``), plus the info's ``shift``."""

    def __init__(self, action_space: gym.Space) -> None:
        super().__init__(action_space=action_space, action_bound_method=None)
        self.seen: list[Batch] = []

    def forward(self, batch: Batch, state: Any = None, **kwargs: Any) -> Batch:
        self.seen.append(batch)
        obs = batch.obs.pick if isinstance(batch.obs, Batch) else np.asarray(batch.obs)[:, 0]
        shift = batch.info.shift if "shift" in batch.info.__dict__ else 0
        return Batch(act=torch.as_tensor(obs + shift, dtype=torch.long), state=state)


def test_compute_action_gives_an_int_for_a_discrete_space() -> None:
    policy = EchoDiscretePolicy(gym.spaces.Discrete(5))
    act = policy.compute_action(np.array([3.0, 0.0]))
    assert type(act) is int and act == 3


def test_compute_action_batches_dict_observations_and_info() -> None:
    policy = EchoDiscretePolicy(gym.spaces.Discrete(5))
    act = policy.compute_action({"pick": 1, "image": np.zeros((2, 2))}, info={"shift": 2})
    assert act == 3
    batch = policy.seen[-1]
    assert batch.obs.image.shape == (1, 2, 2)
    assert batch.obs.pick.shape == (1,) and batch.info.shift.shape == (1,)


def test_compute_action_keeps_multi_discrete_actions_as_arrays() -> None:
    space = gym.spaces.MultiDiscrete([3, 3])
    policy = EchoDiscretePolicy(space)
    policy.forward = lambda batch, state=None, **kw: Batch(act=np.array([[2, 1]]))  # type: ignore[method-assign]
    act = policy.compute_action(np.zeros(2))
    assert isinstance(act, np.ndarray) and act.shape == (2,) and space.contains(act)


@pytest.mark.parametrize(
    "space",
    [
        gym.spaces.Discrete(4, start=1),
        gym.spaces.Box(-2.0, 2.0, (1,)),
        gym.spaces.MultiBinary(3),
    ],
)
def test_random_action_policy_compute_action_fits_the_env(space: gym.Space) -> None:
    space.seed(0)
    policy = RandomActionPolicy(space)
    acts = [policy.compute_action(np.zeros(3)) for _ in range(20)]
    for act in acts:
        assert space.contains(act)
        if isinstance(space, gym.spaces.Discrete):
            assert type(act) is int
        else:
            assert act.shape == space.shape
    env = gym.make("CartPole-v1")
    env.reset(seed=0)
    env.step(RandomActionPolicy(env.action_space).compute_action(np.zeros(4)))


def test_discrete_random_action_policy_has_a_uniform_actor() -> None:
    space = gym.spaces.Discrete(3)
    space.seed(0)
    policy = RandomActionPolicy(space)
    assert policy.actor is not None
    probs = torch.as_tensor(policy.actor(np.zeros((10, 2)))[0])
    assert probs.shape == (10, 3)
    assert torch.allclose(probs, torch.full((10, 3), 1 / 3))
    assert space.contains(policy.compute_action(np.zeros(2)))
    acts = policy(Batch(obs=np.zeros((10, 2)), info=Batch())).act
    assert acts.shape == (10,)
    assert all(space.contains(a) for a in acts)
    assert len(set(acts.tolist())) > 1


def test_box_random_action_policy_actor_samples_actions() -> None:
    space = gym.spaces.Box(-2.0, 3.0, (4,))
    space.seed(0)
    policy = RandomActionPolicy(space)
    assert policy.actor is not None
    sampled = np.asarray(policy.actor(np.zeros((10, 2)))[0])
    assert sampled.shape == (10, 4)
    assert all(space.contains(row.astype(space.dtype)) for row in sampled)
    assert len(np.unique(sampled, axis=0)) == 10
    assert RandomActionPolicy(gym.spaces.MultiBinary(3)).actor is None


def test_exploration_noise_is_identity_by_default() -> None:
    policy = LinearPolicy(BOX)
    act = np.ones((2, 2))
    assert policy.add_exploration_noise(act, Batch()) is act
    assert policy.is_within_training_step is False


# ---------------------------------------------------------------- algorithms
class QPolicy(Policy):
    """Greedy policy over a linear Q-model of 2-d observations and 2 actions."""

    def __init__(self, hidden: int = 2) -> None:
        super().__init__(action_space=gym.spaces.Discrete(2), action_bound_method=None)
        self.model = nn.Sequential(nn.Linear(2, hidden), nn.Dropout(0.5), nn.Linear(hidden, 2))

    def forward(self, batch: Batch, state: Any = None, **kwargs: Any) -> Batch:
        q = self.model(torch.as_tensor(batch.obs, dtype=torch.float32))
        return Batch(act=q.argmax(-1), state=state)


def _loss(policy: QPolicy, batch: Batch) -> torch.Tensor:
    q = policy.model(torch.as_tensor(batch.obs, dtype=torch.float32))
    return ((q - torch.as_tensor(batch.rew, dtype=torch.float32)[:, None]) ** 2).mean()


class ToyOffPolicy(OffPolicyAlgorithm[QPolicy], LaggedNetworkPolyakUpdateAlgorithmMixin):
    def __init__(
        self,
        policy: QPolicy,
        optim: Any = None,
        tau: float = 0.5,
        max_grad_norm: float | None = None,
    ) -> None:
        super().__init__(policy=policy)
        LaggedNetworkPolyakUpdateAlgorithmMixin.__init__(self, tau=tau)
        self.optim = self._create_optimizer(
            policy, optim or AdamOptimizerFactory(lr=0.01), max_grad_norm
        )
        self.model_old = self._add_lagged_network(policy.model)
        self.modes: list[tuple[bool, bool, bool]] = []
        self.preprocessed: list[np.ndarray] = []

    def _preprocess_batch(self, batch: Batch, buffer: ReplayBuffer, indices: np.ndarray) -> Batch:
        self.preprocessed.append(indices)
        batch.seen = np.ones(len(indices))
        return batch

    def _update_with_batch(self, batch: Batch) -> TrainingStats:
        assert "seen" in batch.__dict__
        self.modes.append((self.training, self.policy.model.training, self.model_old.training))
        self.optim.step(_loss(self.policy, batch))
        self._update_lagged_network_weights()
        batch.weight = np.full(len(batch), 5.0)
        return TrainingStats()


def _transitions(n: int, seed: int = 0, terminate_every: int = 4) -> list[Batch]:
    rng = np.random.default_rng(seed)
    return [
        Batch(
            obs=rng.normal(size=2),
            act=int(rng.integers(2)),
            rew=float(rng.normal()),
            terminated=(k + 1) % terminate_every == 0,
            truncated=False,
            obs_next=rng.normal(size=2),
            info={},
        )
        for k in range(n)
    ]


def _filled(buf: ReplayBuffer, n: int = 12) -> ReplayBuffer:
    for transition in _transitions(n):
        buf.add(transition)
    return buf


def _params(module: nn.Module) -> list[torch.Tensor]:
    return [p.detach().clone() for p in module.parameters()]


def _same(a: list[torch.Tensor], b: list[torch.Tensor]) -> bool:
    return all(torch.equal(x, y) for x, y in zip(a, b, strict=True))


def test_update_refuses_to_run_outside_a_training_step() -> None:
    algo = ToyOffPolicy(QPolicy())
    with pytest.raises(RuntimeError, match="policy_within_training_step"):
        algo.update(_filled(ReplayBuffer(16)), sample_size=4)


def test_update_runs_the_hooks_in_train_mode_and_restores_the_mode() -> None:
    torch.manual_seed(0)
    algo = ToyOffPolicy(QPolicy())
    algo.eval()
    buf = _filled(ReplayBuffer(16))
    before = _params(algo.policy)
    with policy_within_training_step(algo.policy):
        stats = algo.update(buf, sample_size=4)
    assert algo.modes == [(True, True, False)]  # the lagged copy stays in eval mode
    assert not algo.training and not algo.policy.model.training
    assert len(algo.preprocessed[0]) == 4
    assert stats.train_time > 0
    assert not _same(before, _params(algo.policy))


def test_update_notices_modes_changed_between_updates() -> None:
    algo = ToyOffPolicy(QPolicy())
    buf = _filled(ReplayBuffer(16))
    with policy_within_training_step(algo.policy):
        algo.update(buf, sample_size=4)
        algo.policy.model[1].eval()  # e.g. a collector or the user switched a part to eval
        algo.update(buf, sample_size=4)
        assert algo.policy.model[1].training
        algo.eval()
        algo.update(buf, sample_size=4)
    assert algo.modes == [(True, True, False)] * 3
    assert not any(m.training for m in algo.modules())


def test_update_without_a_buffer_is_a_no_op() -> None:
    algo = ToyOffPolicy(QPolicy())
    with policy_within_training_step(algo.policy):
        stats = algo.update(None, sample_size=4)  # type: ignore[arg-type]
    assert isinstance(stats, TrainingStats) and algo.modes == []


def test_postprocess_pushes_weights_to_a_prioritized_buffer() -> None:
    algo = ToyOffPolicy(QPolicy())
    buf = _filled(PrioritizedReplayBuffer(16, alpha=0.6, beta=0.4))
    reference = copy.deepcopy(buf)
    with policy_within_training_step(algo.policy):
        algo.update(buf, sample_size=5)
    indices = algo.preprocessed[0]
    reference.update_weight(indices, np.full(5, 5.0))
    np.testing.assert_allclose(buf.get_weight(np.arange(12)), reference.get_weight(np.arange(12)))
    assert not np.allclose(buf.get_weight(np.arange(12)), 1.0)


def test_lr_scheduler_steps_once_per_update_and_decays_linearly_to_zero() -> None:
    factory = AdamOptimizerFactory(lr=0.1).with_lr_scheduler_factory(
        LRSchedulerFactoryLinear(max_epochs=2, epoch_num_steps=3, collection_step_num_env_steps=2)
    )
    algo = ToyOffPolicy(QPolicy(), optim=factory)
    buf = _filled(ReplayBuffer(16))
    lrs = []
    with policy_within_training_step(algo.policy):
        for _ in range(6):
            algo.update(buf, sample_size=2)
            lrs.append(algo.optim.torch_optimizer.param_groups[0]["lr"])
    np.testing.assert_allclose(lrs, [0.075, 0.05, 0.025, 0.0, 0.0, 0.0])  # 2 * ceil(3/2) = 4


def test_state_dict_round_trip_restores_parameters_and_optimizer_state() -> None:
    torch.manual_seed(1)
    source = ToyOffPolicy(QPolicy())
    buf = _filled(ReplayBuffer(16))
    with policy_within_training_step(source.policy):
        for _ in range(3):
            source.update(buf, sample_size=4)
    state = source.state_dict()
    assert "_optimizers" in state and len(state["_optimizers"]) == 1
    stream = io.BytesIO()
    torch.save(state, stream)
    stream.seek(0)
    target = ToyOffPolicy(QPolicy())
    target.load_state_dict(torch.load(stream, weights_only=True))
    assert "_optimizers" in state  # the caller's dict is not modified
    assert _same(_params(source), _params(target))
    src_adam = source.optim.torch_optimizer.state_dict()["state"]
    tgt_adam = target.optim.torch_optimizer.state_dict()["state"]
    assert src_adam.keys() == tgt_adam.keys()
    for key in src_adam:
        assert torch.equal(src_adam[key]["exp_avg"], tgt_adam[key]["exp_avg"])


def test_a_checkpoint_restores_the_learning_rate_schedule_where_it_was() -> None:
    def algorithm() -> ToyOffPolicy:
        factory = AdamOptimizerFactory(lr=0.1).with_lr_scheduler_factory(
            LRSchedulerFactoryLinear(
                max_epochs=2, epoch_num_steps=3, collection_step_num_env_steps=2
            )
        )
        return ToyOffPolicy(QPolicy(), optim=factory)

    def lrs_of_updates(algo: ToyOffPolicy, n: int) -> list[float]:
        lrs = []
        with policy_within_training_step(algo.policy):
            for _ in range(n):
                algo.update(buf, sample_size=2)
                lrs.append(algo.optim.torch_optimizer.param_groups[0]["lr"])
        return lrs

    buf = _filled(ReplayBuffer(16))
    source = algorithm()
    assert lrs_of_updates(source, 2) == pytest.approx([0.075, 0.05])
    stream = io.BytesIO()
    torch.save(source.state_dict(), stream)  # plain data: loads with weights_only
    stream.seek(0)
    resumed = algorithm()
    resumed.load_state_dict(torch.load(stream, weights_only=True))
    assert resumed.optim.torch_optimizer.param_groups[0]["lr"] == pytest.approx(0.05)
    # the decay goes on from the third of its four steps instead of starting over
    assert lrs_of_updates(resumed, 3) == pytest.approx([0.025, 0.0, 0.0])

    # a state without the scheduler entry (the published layout) still loads
    state = source.state_dict()
    state["_optimizers"] = [
        {k: v for k, v in optim.items() if k != "lr_scheduler"} for optim in state["_optimizers"]
    ]
    legacy = algorithm()
    legacy.load_state_dict(state)
    assert legacy.optim.torch_optimizer.param_groups[0]["lr"] == pytest.approx(0.05)


def test_state_dict_without_optimizers_is_rejected_untouched() -> None:
    algo = ToyOffPolicy(QPolicy())
    state = nn.Module.state_dict(ToyOffPolicy(QPolicy()))
    before = _params(algo)
    with pytest.raises(RuntimeError, match="_optimizers"):
        algo.load_state_dict(state)
    assert _same(before, _params(algo))


def test_checkpoint_of_another_algorithm_is_rejected_untouched() -> None:
    algo = ToyOffPolicy(QPolicy())
    other = ToyOffPolicy(QPolicy(hidden=3))
    before = _params(algo)
    with pytest.raises(RuntimeError, match=r"parameter groups|another algorithm"):
        algo.load_state_dict(other.state_dict())
    state = ToyOffPolicy(QPolicy()).state_dict()
    state["extra.weight"] = torch.zeros(1)
    with pytest.raises(RuntimeError, match=r"unexpected keys \['extra.weight'\]"):
        algo.load_state_dict(state)
    state = ToyOffPolicy(QPolicy()).state_dict()
    state["_optimizers"] = []
    with pytest.raises(RuntimeError, match="0 optimizer states but ToyOffPolicy has 1"):
        algo.load_state_dict(state)
    assert _same(before, _params(algo))


def test_nan_loss_raises_and_leaves_the_parameters_intact() -> None:
    algo = ToyOffPolicy(QPolicy())
    before = _params(algo.policy)
    loss = _loss(algo.policy, Batch(obs=np.ones((2, 2)), rew=np.array([np.nan, 1.0])))
    with pytest.raises(FloatingPointError, match="not finite"):
        algo.optim.step(loss)
    with pytest.raises(FloatingPointError, match="QPolicy"):
        algo.optim.step(torch.tensor(float("inf"), requires_grad=True))
    assert _same(before, _params(algo.policy))


def test_step_with_loss_values_reads_checks_and_steps() -> None:
    algo = ToyOffPolicy(QPolicy(), optim=TorchOptimizerFactory(torch.optim.SGD, lr=0.1))
    batch = Batch(obs=np.ones((2, 2)), rew=np.array([1.0, 2.0]))
    before = _params(algo.policy)
    loss = _loss(algo.policy, batch)
    part = loss.detach() / 2
    values = algo.optim.step_with_loss_values(loss, half=part)
    assert values == pytest.approx([loss.item(), loss.item() / 2])
    assert not _same(before, _params(algo.policy))
    after = _params(algo.policy)
    bad = _loss(algo.policy, batch)
    with pytest.raises(FloatingPointError, match=r"QPolicy: .*\(loss=[\d.]+, half=nan\)"):
        algo.optim.step_with_loss_values(bad, half=torch.tensor(float("nan")))
    assert _same(after, _params(algo.policy))


def test_max_grad_norm_clips_the_gradient() -> None:
    torch.manual_seed(2)
    algo = ToyOffPolicy(
        QPolicy(), optim=TorchOptimizerFactory(torch.optim.SGD, lr=0.0), max_grad_norm=0.1
    )
    loss = _loss(algo.policy, Batch(obs=np.full((4, 2), 50.0), rew=np.full(4, -100.0)))
    algo.optim.step(loss)
    grads = [p.grad for p in algo.policy.parameters() if p.grad is not None]
    norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))
    assert float(norm) == pytest.approx(0.1, rel=1e-4)
    with pytest.raises(ValueError, match="max_grad_norm"):
        ToyOffPolicy(QPolicy(), max_grad_norm=0.0)


def test_optimizer_over_a_list_of_modules_shares_parameters_once() -> None:
    algo = ToyOffPolicy(QPolicy())
    shared = algo.policy.model[0]
    optim = algo._create_optimizer([algo.policy.model, shared], AdamOptimizerFactory())
    assert len(optim.torch_optimizer.param_groups[0]["params"]) == 4
    assert len(algo.state_dict()["_optimizers"]) == 2


def test_polyak_lagged_network_trails_its_source() -> None:
    algo = ToyOffPolicy(QPolicy(), tau=0.25)
    source, target = algo.policy.model, algo.model_old
    assert all(not p.requires_grad for p in target.parameters())
    with torch.no_grad():
        for p in source.parameters():
            p.add_(1.0)
    old = _params(target)
    algo._update_lagged_network_weights()
    for o, n, s in zip(old, _params(target), _params(source), strict=True):
        torch.testing.assert_close(n, 0.75 * o + 0.25 * s)


class ToyDQN(OffPolicyAlgorithm[QPolicy], LaggedNetworkFullUpdateAlgorithmMixin):
    def __init__(self, policy: QPolicy) -> None:
        super().__init__(policy=policy)
        LaggedNetworkFullUpdateAlgorithmMixin.__init__(self)
        self.optim = self._create_optimizer(policy, AdamOptimizerFactory(lr=0.1))
        self.model_old = self._add_lagged_network(policy.model)

    def _update_with_batch(self, batch: Batch) -> TrainingStats:
        self.optim.step(_loss(self.policy, batch))
        return TrainingStats()


def test_full_update_copies_only_when_asked() -> None:
    algo = ToyDQN(QPolicy())
    initial = _params(algo.model_old)
    with policy_within_training_step(algo.policy):
        algo.update(_filled(ReplayBuffer(16)), sample_size=8)
    assert _same(initial, _params(algo.model_old))
    assert not _same(initial, _params(algo.policy.model))
    algo._update_lagged_network_weights()
    assert _same(_params(algo.policy.model), _params(algo.model_old))
    assert not algo.model_old.training and not algo.model_old.module.training


class ToyOnPolicy(OnPolicyAlgorithm[QPolicy]):
    def __init__(self, policy: QPolicy) -> None:
        super().__init__(policy=policy)
        factory = AdamOptimizerFactory(lr=0.1).with_lr_scheduler_factory(
            LRSchedulerFactoryLinear(
                max_epochs=1, epoch_num_steps=10, collection_step_num_env_steps=1
            )
        )
        self.optim = self._create_optimizer(policy, factory)
        self.calls: list[tuple[np.ndarray, int | None, int]] = []

    def _update_with_batch(
        self, batch: Batch, batch_size: int | None, repeat: int
    ) -> TrainingStats:
        self.calls.append((np.asarray(batch.obs[:, 0]), batch_size, repeat))
        for _ in range(repeat):
            self.optim.step(_loss(self.policy, batch))
        return TrainingStats()


def test_on_policy_update_uses_the_whole_buffer_in_order() -> None:
    algo = ToyOnPolicy(QPolicy())
    buf = VectorReplayBuffer(8, 2)
    for transition in _transitions(6):
        buf.add(Batch.stack([transition, transition]), buffer_ids=[0, 1])
    with policy_within_training_step(algo.policy):
        algo.update(buf, batch_size=3, repeat=2)
    obs, batch_size, repeat = algo.calls[0]
    chronological = buf[buf.sample_indices(0)].obs[:, 0]
    np.testing.assert_array_equal(obs, chronological)
    assert (batch_size, repeat, len(obs)) == (3, 2, 8)
    assert algo.optim.torch_optimizer.param_groups[0]["lr"] == pytest.approx(0.09)


class ToyOffline(OfflineAlgorithm[QPolicy]):
    def __init__(self, policy: QPolicy) -> None:
        super().__init__(policy=policy)
        self.optim = self._create_optimizer(policy, AdamOptimizerFactory())

    def _update_with_batch(self, batch: Batch) -> TrainingStats:
        self.optim.step(_loss(self.policy, batch))
        return TrainingStats()


def test_offline_algorithm_updates_and_keeps_the_buffer() -> None:
    algo = ToyOffline(QPolicy())
    buf = _filled(ReplayBuffer(16))
    assert algo.process_buffer(buf) is buf
    with policy_within_training_step(algo.policy):
        assert isinstance(algo.update(buf, sample_size=4), TrainingStats)


class _FakeTrainer:
    def __init__(self, algorithm: Algorithm, params: Any) -> None:
        self.algorithm, self.params = algorithm, params

    def run(self) -> str:
        return f"ran {type(self.algorithm).__name__} with {self.params}"


@pytest.mark.parametrize(
    ("algo_class", "trainer_name"),
    [
        (ToyOnPolicy, "OnPolicyTrainer"),
        (ToyDQN, "OffPolicyTrainer"),
        (ToyOffline, "OfflineTrainer"),
    ],
)
def test_create_trainer_and_run_training_use_the_matching_trainer(
    monkeypatch: pytest.MonkeyPatch, algo_class: type, trainer_name: str
) -> None:
    monkeypatch.setattr(tianshou.trainer, trainer_name, _FakeTrainer)
    algo = algo_class(QPolicy())
    trainer = algo.create_trainer("params")
    assert isinstance(trainer, _FakeTrainer) and trainer.algorithm is algo
    assert algo.run_training("p") == f"ran {algo_class.__name__} with p"


class CountingOffPolicyWrapper(OffPolicyWrapperAlgorithm[QPolicy]):
    def __init__(self, wrapped: OffPolicyAlgorithm[QPolicy]) -> None:
        super().__init__(wrapped)
        self.extra = nn.Linear(1, 1)
        self.extra_optim = self._create_optimizer(self.extra, AdamOptimizerFactory())
        self.original: list[TrainingStats] = []

    def _wrapper_update_with_batch(
        self, batch: Batch, original_stats: TrainingStats
    ) -> TrainingStats:
        self.original.append(original_stats)
        return original_stats


def test_off_policy_wrapper_chains_hooks_and_checkpoints_both_algorithms() -> None:
    inner = ToyOffPolicy(
        QPolicy(),
        optim=AdamOptimizerFactory(lr=0.1).with_lr_scheduler_factory(
            LRSchedulerFactoryLinear(
                max_epochs=1, epoch_num_steps=4, collection_step_num_env_steps=1
            )
        ),
    )
    wrapper = CountingOffPolicyWrapper(inner)
    assert wrapper.policy is inner.policy
    buf = _filled(PrioritizedReplayBuffer(16, alpha=0.6, beta=0.4))
    with policy_within_training_step(wrapper.policy):
        stats = wrapper.update(buf, sample_size=4)
    assert wrapper.original == [stats]
    assert len(inner.preprocessed) == 1 and len(inner.modes) == 1
    assert inner.optim.torch_optimizer.param_groups[0]["lr"] == pytest.approx(0.075)
    state = wrapper.state_dict()
    assert len(state["_optimizers"]) == 1 and len(state["wrapped_algorithm._optimizers"]) == 1
    clone = CountingOffPolicyWrapper(ToyOffPolicy(QPolicy()))
    clone.load_state_dict(state)
    assert _same(_params(clone), _params(wrapper))


class CountingOnPolicyWrapper(OnPolicyWrapperAlgorithm[QPolicy]):
    def _wrapper_update_with_batch(
        self, batch: Batch, batch_size: int | None, repeat: int, original_stats: TrainingStats
    ) -> TrainingStats:
        self.args = (batch_size, repeat, original_stats)
        return TrainingStats(train_time=-1.0)


def test_on_policy_wrapper_forwards_the_update_arguments() -> None:
    inner = ToyOnPolicy(QPolicy())
    wrapper = CountingOnPolicyWrapper(inner)
    with policy_within_training_step(wrapper.policy):
        stats = wrapper.update(_filled(ReplayBuffer(16)), batch_size=None, repeat=1)
    assert wrapper.args[:2] == (None, 1) and len(inner.calls) == 1
    assert stats.train_time > 0
    assert inner.optim.torch_optimizer.param_groups[0]["lr"] == pytest.approx(0.09)


@pytest.mark.parametrize(
    "space",
    [
        gym.spaces.Discrete(3, start=2),
        gym.spaces.Box(-2.0, 3.0, (4,)),
        gym.spaces.MultiDiscrete([2, 5]),
        gym.spaces.Box(-np.inf, np.inf, (2,)),
    ],
)
def test_random_action_policy_samples_from_the_space(space: gym.Space) -> None:
    space.seed(3)
    policy = RandomActionPolicy(space)
    acts = policy(Batch(obs=np.zeros((50, 1)), info=Batch())).act
    assert len(acts) == 50
    assert all(space.contains(np.asarray(a, dtype=space.dtype)) for a in acts)
    assert len(np.unique(np.asarray(acts).reshape(50, -1), axis=0)) > 1
    space.seed(3)
    again = RandomActionPolicy(space)(Batch(obs=np.zeros((50, 1)), info=Batch())).act
    np.testing.assert_array_equal(acts, again)
    np.testing.assert_array_equal(policy.map_action(acts), acts)


@pytest.mark.parametrize(
    ("make", "kwargs"),
    [
        (lambda: ToyOffPolicy(QPolicy()), {"sample_size": 4}),
        (lambda: ToyOffPolicy(QPolicy()), {"sample_size": 0}),
        (lambda: ToyOnPolicy(QPolicy()), {"batch_size": 4, "repeat": 1}),
        (lambda: ToyOffline(QPolicy()), {"sample_size": 4}),
    ],
    ids=["off-policy", "off-policy-all", "on-policy", "offline"],
)
def test_update_on_an_empty_buffer_says_to_collect_first(make: Any, kwargs: dict[str, Any]) -> None:
    algo = make()
    before = _params(algo)
    for buffer in (ReplayBuffer(8), VectorReplayBuffer(8, 2)):
        with (
            policy_within_training_step(algo.policy),
            pytest.raises(ValueError, match="empty buffer: collect before updating"),
        ):
            algo.update(buffer, **kwargs)
    assert _same(before, _params(algo))


def _twin_networks_and_optimizers(seed: int) -> tuple[list[nn.Module], list[Algorithm.Optimizer]]:
    torch.manual_seed(seed)
    nets: list[nn.Module] = [nn.Linear(3, 1), nn.Linear(3, 1)]
    optimizers = [
        Algorithm.Optimizer(torch.optim.Adam(net.parameters(), lr=0.1), net, max_grad_norm=norm)
        for net, norm in zip(nets, (None, 0.01), strict=True)
    ]
    return nets, optimizers


def test_step_jointly_equals_one_step_of_each_on_its_own_loss() -> None:
    x = torch.randn(16, 3)
    joint_nets, joint_optims = _twin_networks_and_optimizers(0)
    own_nets, own_optims = _twin_networks_and_optimizers(0)
    for _ in range(3):
        step_jointly(joint_optims, sum(net(x).pow(2).mean() for net in joint_nets))
        for net, optim in zip(own_nets, own_optims, strict=True):
            optim.step(net(x).pow(2).mean())
    for joint, own in zip(joint_nets, own_nets, strict=True):
        for a, b in zip(joint.parameters(), own.parameters(), strict=True):
            torch.testing.assert_close(a, b, rtol=0, atol=0)
    # each optimizer clipped its own gradients (after the last joint step): only the second
    norms = [torch.cat([p.grad.flatten() for p in net.parameters()]).norm() for net in joint_nets]
    assert norms[0] > 0.1 and norms[1] <= 0.01 + 1e-6
