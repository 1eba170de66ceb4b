"""Returns: GAE / Monte-Carlo and n-step targets with partial-episode bootstrapping.

Each computation is checked against values worked out by hand (wrap-around, an episode ending at
index 0, terminated vs truncated vs still running) and against deliberately naive loops on random
vector buffers.
"""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tianshou.algorithm._returns import _combine, episode_mc_return_to_go, gae_return
from tianshou.algorithm.algorithm_base import Algorithm
from tianshou.data import Batch, PrioritizedReplayBuffer, ReplayBuffer, VectorReplayBuffer

NONE, TERM, TRUNC = 0, 1, 2


def _step(k: int, flag: int) -> Batch:
    return Batch(
        obs=np.array([k]),
        act=0,
        rew=float(k + 1),
        terminated=flag == TERM,
        truncated=flag == TRUNC,
        obs_next=np.array([k + 1]),
        info={},
    )


def _buffer(flags: list[int], size: int = 4) -> ReplayBuffer:
    """A plain buffer fed transitions k = 0, 1, ... with reward k + 1 and the given end flags."""
    buf = ReplayBuffer(size)
    for k, flag in enumerate(flags):
        buf.add(_step(k, flag))
    return buf


def _q_of_index(buffer: ReplayBuffer, indices: np.ndarray) -> torch.Tensor:
    return torch.as_tensor(100.0 + indices, dtype=torch.float32)


# ---------------------------------------------------------------- hand-computed values
# buffer A (size 4, six adds): slots 0..3 hold k4 (running on), k5 (newest, still running),
# k2 (ordinary), k3 (truncated); chronological order = slots [2, 3, 0, 1].
FLAGS_A = [NONE, TERM, NONE, TRUNC, NONE, NONE]
# buffer B: slots hold k4, k5 (terminated), k2, k3; the episode k2..k5 wraps from slot 3 to 0.
FLAGS_B = [NONE, TERM, NONE, NONE, NONE, TERM]


def test_gae_by_hand_truncated_and_running_episode() -> None:
    buf = _buffer(FLAGS_A)
    batch, indices = buf.sample(0)
    np.testing.assert_array_equal(indices, [2, 3, 0, 1])
    returns, adv = Algorithm.compute_episodic_return(
        batch, buf, indices, v_s_=np.array([10.0, 20.0, 30.0, 40.0]), gamma=0.5, gae_lambda=1.0
    )
    # v_s = roll(v_s_) = [40, 10, 20, 30]; deltas = [-32, 4, 0, -4]; cuts after the truncated
    # step (position 1) and at the still-running newest step (position 3)
    np.testing.assert_allclose(adv, [-30.0, 4.0, -2.0, -4.0])
    np.testing.assert_allclose(returns, [10.0, 14.0, 18.0, 26.0])


def test_gae_by_hand_wrap_around_with_termination() -> None:
    buf = _buffer(FLAGS_B)
    batch, indices = buf.sample(0)
    returns, adv = Algorithm.compute_episodic_return(
        batch, buf, indices, v_s_=torch.tensor([1.0, 2.0, 3.0, 4.0]), gamma=0.5, gae_lambda=1.0
    )
    # the terminated step's next value is masked: v_s_ = [1, 2, 3, 0], v_s = [0, 1, 2, 3]
    np.testing.assert_allclose(adv, [7.0, 7.0, 6.0, 3.0])
    np.testing.assert_allclose(returns, [7.0, 8.0, 8.0, 6.0])


def test_gae_by_hand_episode_ends_at_index_zero() -> None:
    buf = _buffer([NONE, NONE, NONE, TERM], size=3)  # slot 0 holds the terminated k3
    batch, indices = buf.sample(0)
    np.testing.assert_array_equal(indices, [1, 2, 0])
    assert len(buf.unfinished_index()) == 0
    returns, adv = Algorithm.compute_episodic_return(
        batch, buf, indices, v_s_=np.array([1.0, 2.0, 3.0]), gamma=0.5, gae_lambda=0.5
    )
    np.testing.assert_allclose(adv, [3.375, 3.5, 2.0])
    np.testing.assert_allclose(returns, [3.375, 4.5, 4.0])


def _two_subbuffers() -> VectorReplayBuffer:
    """Sub-buffer 0 holds a running episode (k0, k1), sub-buffer 1 a terminated one (k0, k1)."""
    buf = VectorReplayBuffer(4, 2)
    for k in range(2):
        flags = [NONE, TERM if k == 1 else NONE]
        buf.add(Batch.stack([_step(k, flag) for flag in flags]), buffer_ids=[0, 1])
    return buf


def test_gae_by_hand_running_episode_followed_by_another_subbuffer() -> None:
    buf = _two_subbuffers()
    batch, indices = buf.sample(0)
    np.testing.assert_array_equal(indices, [0, 1, 2, 3])
    returns, adv = Algorithm.compute_episodic_return(
        batch, buf, indices, v_s_=np.ones(4), gamma=1.0, gae_lambda=1.0
    )
    # the recursion must not run from sub-buffer 0's newest step into sub-buffer 1
    np.testing.assert_allclose(adv, [4.0, 2.0, 2.0, 1.0])
    np.testing.assert_allclose(returns, [4.0, 3.0, 3.0, 2.0])


def test_nstep_by_hand_running_episode_followed_by_another_subbuffer() -> None:
    buf = _two_subbuffers()
    indices = np.array([0, 1, 2, 3])
    batch = Algorithm.compute_nstep_return(
        buf[indices], buf, indices, _q_of_index, gamma=1.0, n_step=2
    )
    np.testing.assert_allclose(batch.returns[:, 0].numpy(), [104.0, 103.0, 3.0, 2.0])


def test_monte_carlo_returns_by_hand() -> None:
    buf = _buffer(FLAGS_B)
    batch, indices = buf.sample(0)
    returns, adv = Algorithm.compute_episodic_return(batch, buf, indices, gamma=0.5, gae_lambda=1)
    # rewards in order [3, 4, 5, 6], one episode ending in termination
    np.testing.assert_allclose(returns, [3 + 2 + 1.25 + 0.75, 4 + 2.5 + 1.5, 5 + 3, 6])
    np.testing.assert_allclose(adv, returns)


def test_explicit_v_s_is_used() -> None:
    buf = _buffer(FLAGS_A)
    batch, indices = buf.sample(0)
    v_s = np.array([1.0, 2.0, 3.0, 4.0])
    returns, adv = Algorithm.compute_episodic_return(
        batch, buf, indices, v_s_=np.zeros(4), v_s=v_s, gamma=0.9, gae_lambda=0.0
    )
    np.testing.assert_allclose(adv, batch.rew - v_s)
    np.testing.assert_allclose(returns, batch.rew)


def test_monte_carlo_needs_lambda_one() -> None:
    buf = _buffer(FLAGS_A)
    batch, indices = buf.sample(0)
    with pytest.raises(ValueError, match=r"gae_lambda=1\.0"):
        Algorithm.compute_episodic_return(batch, buf, indices, gae_lambda=0.95)


def test_wrong_number_of_values_is_rejected() -> None:
    buf = _buffer(FLAGS_A)
    batch, indices = buf.sample(0)
    with pytest.raises(ValueError, match="v_s_ has 3 values for 4 transitions"):
        Algorithm.compute_episodic_return(batch, buf, indices, v_s_=np.zeros(3))


def test_nstep_by_hand_truncated_and_running() -> None:
    buf = _buffer(FLAGS_A)
    indices = np.array([2, 3, 0, 1])
    batch = Algorithm.compute_nstep_return(
        buf[indices], buf, indices, _q_of_index, gamma=0.5, n_step=3
    )
    # slot 2: 3 + .5*4, stops at the truncated slot 3 and bootstraps from it: + .25 * Q(3)
    # slot 0: 5 + .5*6, stops at the newest slot 1 (still running): + .25 * Q(1)
    expected = [5 + 0.25 * 103, 4 + 0.5 * 103, 8 + 0.25 * 101, 6 + 0.5 * 101]
    assert batch.returns.shape == (4, 1)
    assert batch.returns.dtype == torch.float32
    np.testing.assert_allclose(batch.returns[:, 0].numpy(), expected)


def test_nstep_by_hand_wrap_around_and_termination() -> None:
    buf = _buffer(FLAGS_B)
    indices = np.array([2, 3, 0, 1])
    batch = Algorithm.compute_nstep_return(
        buf[indices], buf, indices, _q_of_index, gamma=0.5, n_step=3
    )
    # slot 2 runs through the wrap 2 -> 3 -> 0 and bootstraps from Q(0); terminated steps give 0
    expected = [6.25 + 0.125 * 100, 8.0, 8.0, 6.0]
    np.testing.assert_allclose(batch.returns[:, 0].numpy(), expected)


def test_one_step_return_and_vector_targets() -> None:
    buf = _buffer(FLAGS_B)
    indices = np.array([1, 2, 3])

    def atoms(buffer: ReplayBuffer, idx: np.ndarray) -> torch.Tensor:
        return torch.stack([torch.as_tensor(idx, dtype=torch.float64)] * 3, dim=1)

    batch = Algorithm.compute_nstep_return(buf[indices], buf, indices, atoms, gamma=0.9)
    assert batch.returns.shape == (3, 3)
    assert batch.returns.dtype == torch.float64
    rew = buf.rew[indices]
    expected = rew[:, None] + 0.9 * np.array([[0.0] * 3, [2.0] * 3, [3.0] * 3])
    np.testing.assert_allclose(batch.returns.numpy(), expected)


def test_one_step_passes_the_sampled_indices_to_the_target_function() -> None:
    buf = _buffer(FLAGS_A)
    indices = np.array([0, 2])
    seen = []

    def target(buffer: ReplayBuffer, idx: np.ndarray) -> torch.Tensor:
        seen.append(idx)
        return torch.zeros(len(idx))

    Algorithm.compute_nstep_return(buf[indices], buf, indices, target, n_step=1)
    assert seen[0] is indices


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_nstep_returns_stay_on_the_target_device() -> None:
    buf = _buffer(FLAGS_B)
    indices = np.array([2, 3, 0, 1])

    def on_gpu(buffer: ReplayBuffer, idx: np.ndarray) -> torch.Tensor:
        return _q_of_index(buffer, idx).cuda()

    batch = Algorithm.compute_nstep_return(buf[indices], buf, indices, on_gpu, 0.5, n_step=3)
    assert batch.returns.device.type == "cuda"
    np.testing.assert_allclose(batch.returns[:, 0].cpu().numpy(), [18.75, 8.0, 8.0, 6.0])


def test_nstep_converts_the_priority_weights() -> None:
    buf = PrioritizedReplayBuffer(8, alpha=0.6, beta=0.4)
    for k, flag in enumerate([NONE, NONE, TERM]):
        buf.add(_step(k, flag))
    batch, indices = buf.sample(4)
    out = Algorithm.compute_nstep_return(batch, buf, indices, _q_of_index, n_step=2)
    assert isinstance(out.weight, torch.Tensor)
    assert out.weight.dtype == torch.float32


def test_nstep_rejects_a_non_positive_horizon() -> None:
    buf = _buffer(FLAGS_A)
    with pytest.raises(ValueError, match="n_step"):
        Algorithm.compute_nstep_return(buf[[0]], buf, np.array([0]), _q_of_index, n_step=0)


def test_value_mask_is_not_terminated() -> None:
    buf = _buffer(FLAGS_B)
    np.testing.assert_array_equal(Algorithm.value_mask(buf, np.array([0, 1, 2, 3])), [1, 0, 1, 1])


def test_mc_return_to_go_kernel() -> None:
    np.testing.assert_allclose(
        episode_mc_return_to_go(np.array([1.0, 2.0, 3.0]), 0.5), [2.75, 3.5, 3]
    )
    assert episode_mc_return_to_go(np.array([]), 0.5).shape == (0,)
    assert gae_return(np.array([]), np.array([]), np.array([]), np.array([]), 0.9, 0.9).shape == (
        0,
    )


# ---------------------------------------------------------------- naive references, random data
def _random_vector_buffer(seed: int) -> VectorReplayBuffer:
    rng = np.random.default_rng(seed)
    num = int(rng.integers(1, 5))
    buf = VectorReplayBuffer(num * int(rng.integers(3, 9)), num)
    steps = np.zeros(num, dtype=int)
    for _ in range(int(rng.integers(1, 40))):
        env_ids = np.flatnonzero(rng.random(num) < 0.7)
        if len(env_ids) == 0:
            continue
        size = len(env_ids)
        term = rng.random(size) < 0.15
        trunc = ~term & (rng.random(size) < 0.15)
        buf.add(
            Batch(
                obs=steps[env_ids][:, None].astype(float),
                act=np.zeros(size),
                rew=rng.normal(size=size),
                terminated=term,
                truncated=trunc,
                obs_next=steps[env_ids][:, None] + 1.0,
                info=Batch(),
            ),
            buffer_ids=env_ids,
        )
        steps[env_ids] += 1
    return buf


def _naive_gae(
    batch: Batch,
    buf: ReplayBuffer,
    indices: np.ndarray,
    v_next: np.ndarray,
    gamma: float,
    lam: float,
) -> np.ndarray:
    """Forward sum over each episode stretch, written straight from the definition."""
    unfinished = set(buf.unfinished_index().tolist())
    terminated = batch.terminated.tolist()
    masked = [0.0 if terminated[t] else float(v_next[t]) for t in range(len(indices))]
    values = [masked[t - 1] for t in range(len(indices))]  # v_s defaults to the rolled v_s_
    adv = []
    for t in range(len(indices)):
        total, weight, u = 0.0, 1.0, t
        while True:
            total += weight * (batch.rew[u] + gamma * masked[u] - values[u])
            if batch.terminated[u] or batch.truncated[u] or int(indices[u]) in unfinished:
                break
            weight *= gamma * lam
            u += 1
        adv.append(total)
    return np.array(adv)


def _naive_nstep(
    buf: ReplayBuffer, indices: np.ndarray, q: np.ndarray, gamma: float, n: int
) -> np.ndarray:
    unfinished = set(buf.unfinished_index().tolist())
    out = []
    for i in indices.tolist():
        ret, disc, cur = 0.0, 1.0, i
        for step in range(n):
            ret += disc * float(buf.rew[cur])
            disc *= gamma
            if buf.done[cur] or cur in unfinished:
                break
            if step < n - 1:
                cur = int(buf.next(cur))
        out.append(ret + disc * q[cur] * (not buf.terminated[cur]))
    return np.array(out)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    gamma=st.floats(0.0, 1.0),
    lam=st.floats(0.0, 1.0),
)
def test_gae_matches_naive_reference(seed: int, gamma: float, lam: float) -> None:
    buf = _random_vector_buffer(seed)
    batch, indices = buf.sample(0)
    if len(indices) == 0:
        return
    v_next = np.random.default_rng(seed + 1).normal(size=len(indices))
    returns, adv = Algorithm.compute_episodic_return(
        batch, buf, indices, v_s_=v_next, gamma=gamma, gae_lambda=lam
    )
    expected = _naive_gae(batch, buf, indices, v_next, gamma, lam)
    np.testing.assert_allclose(adv, expected, rtol=1e-9, atol=1e-9)
    masked = v_next * ~batch.terminated
    np.testing.assert_allclose(returns, adv + np.roll(masked, 1), rtol=1e-12, atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), gamma=st.floats(0.0, 1.0), n=st.integers(1, 5))
def test_nstep_matches_naive_reference(seed: int, gamma: float, n: int) -> None:
    buf = _random_vector_buffer(seed)
    if len(buf) == 0:
        return
    q = np.random.default_rng(seed + 2).normal(size=buf.maxsize)
    batch, indices = buf.sample(16)

    def target(buffer: ReplayBuffer, idx: np.ndarray) -> torch.Tensor:
        return torch.as_tensor(q[idx], dtype=torch.float64)

    out = Algorithm.compute_nstep_return(batch, buf, indices, target, gamma=gamma, n_step=n)
    expected = _naive_nstep(buf, indices, q, gamma, n)
    np.testing.assert_allclose(out.returns[:, 0].numpy(), expected, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_host_targets_combine_exactly_as_in_torch(dtype: torch.dtype) -> None:
    rng = np.random.default_rng(3)
    reward_sum, discount = rng.standard_normal(64), rng.random(64)
    target = torch.as_tensor(rng.standard_normal((64, 51)), dtype=dtype)
    coef = torch.as_tensor(np.stack([discount, reward_sum], axis=1))
    expected = (coef[:, :1] * target + coef[:, 1:]).to(dtype)
    returns = _combine(reward_sum, discount, target)
    assert returns.dtype == dtype
    assert torch.equal(returns, expected)


def test_combine_keeps_the_graph_of_a_target_that_requires_grad() -> None:
    target = torch.ones(3, 1, requires_grad=True)
    returns = _combine(np.zeros(3), np.full(3, 0.5), target)
    returns.sum().backward()
    assert target.grad is not None
    np.testing.assert_allclose(target.grad.numpy(), 0.5)
