"""Data-parallel training on real processes (gloo on localhost): replicas stay bit-identical, a
two-rank update is the one-process update on both ranks' data, bad starts and failing ranks end
the job with a message naming the cause."""

import copy
import io
import pickle
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
import torch.multiprocessing as mp
from torch.utils.tensorboard import SummaryWriter

from test.distributed.ranks import free_port, run_ranks, start_ranks
from tianshou.algorithm import DQN, NPG, PPO
from tianshou.algorithm.algorithm_base import Algorithm
from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory, TorchOptimizerFactory
from tianshou.data import Batch, Collector, ReplayBuffer, VectorReplayBuffer
from tianshou.distributed import SINGLE_PROCESS, DataParallel, data_parallel
from tianshou.distributed.rank_group import differing_config_keys
from tianshou.env import DummyVectorEnv, VectorEnvNormObs
from tianshou.env.mujoco import make_mujoco_env
from tianshou.scripts.mujoco.networks import gaussian_policy, on_policy_actor_critic
from tianshou.scripts.mujoco.ppo import build_ppo, ppo_parser
from tianshou.trainer import OffPolicyTrainerParams, OnPolicyTrainerParams
from tianshou.utils import TensorboardLogger
from tianshou.utils.logger.logger_base import BaseLogger, LazyLogger
from tianshou.utils.net.common import Net
from tianshou.utils.random_states import GlobalRandomStates
from tianshou.utils.statistics import RunningMeanStd
from tianshou.utils.torch_utils import policy_within_training_step

from examples.mujoco.mujoco_reinforce import build_reinforce
from examples.mujoco.mujoco_reinforce import get_args as reinforce_args
from examples.mujoco.mujoco_sac import build_sac
from examples.mujoco.mujoco_sac import get_args as sac_args

TASK = "Pendulum-v1"
ENVS_PER_RANK = 2


def _ppo_args(*extra: str) -> Any:
    return ppo_parser(None).parse_args(
        ["--task", TASK, "--hidden-sizes", "8", "--device", "cpu", *extra]
    )


def _saved_replica(algorithm: Algorithm, envs: Any, info: Any, initial: dict) -> dict:
    obs_rms = None
    if isinstance(envs, VectorEnvNormObs):
        stats = envs.get_obs_rms()
        assert isinstance(stats, RunningMeanStd)
        obs_rms = (stats.mean, stats.var, stats.count)
    return {
        "state": algorithm.state_dict(),
        "initial": initial,
        "obs_rms": obs_rms,
        "train_step": info.train_step,
        "update_step": info.update_step,
    }


PPO_EPOCH_ENV_STEPS = 120
"""Env steps of a PPO epoch, both ranks together: two collections of 30 env steps per rank."""


ON_POLICY_OPTIONS = (
    *("--task", TASK, "--hidden-sizes", "8", "--device", "cpu", "--epoch", "2"),
    *("--epoch-num-steps", str(PPO_EPOCH_ENV_STEPS)),
)
"""The tiny on-policy scripts' options (with lr decay over the run, return scaling)."""


def _normalising_envs(
    ranks: DataParallel,
) -> tuple[gym.Env, VectorEnvNormObs, VectorEnvNormObs]:
    """The env, and training and test envs normalising observations, seeded by rank."""
    torch.manual_seed(ranks.rank)
    env, train_envs, test_envs = make_mujoco_env(
        TASK, 100 * ranks.rank, ENVS_PER_RANK, 1, obs_norm=True, backend="dummy"
    )
    assert isinstance(train_envs, VectorEnvNormObs) and isinstance(test_envs, VectorEnvNormObs)
    return env, train_envs, test_envs


def _ppo_on_rank(ranks: DataParallel) -> tuple[PPO, VectorEnvNormObs, VectorEnvNormObs]:
    """A PPO replica and its normalising envs."""
    env, train_envs, test_envs = _normalising_envs(ranks)
    return build_ppo(ppo_parser(None).parse_args(ON_POLICY_OPTIONS), env), train_envs, test_envs


def _on_policy_params(
    algorithm: Algorithm,
    train_envs: VectorEnvNormObs,
    test_envs: VectorEnvNormObs,
    **kwargs: Any,
) -> OnPolicyTrainerParams:
    """The tests' PPO settings, with fresh collectors unless ``kwargs`` gives others."""
    settings: dict[str, Any] = {
        "training_collector": Collector(
            algorithm, train_envs, VectorReplayBuffer(60, ENVS_PER_RANK)
        ),
        "test_collector": Collector(algorithm, test_envs),
        "epoch_num_steps": PPO_EPOCH_ENV_STEPS,
        "collection_step_num_env_steps": 30,
        "update_step_num_repetitions": 2,
        "batch_size": 16,
        "test_step_num_episodes": 1,
        "show_progress": False,
        "verbose": False,
    }
    return OnPolicyTrainerParams(**(settings | kwargs))


def _train_ppo_replica(ranks: DataParallel, out_dir: Path) -> None:
    algorithm, train_envs, test_envs = _ppo_on_rank(ranks)
    ranks.attach(algorithm, train_envs)
    initial = copy.deepcopy(algorithm.policy.state_dict())
    info = algorithm.run_training(_on_policy_params(algorithm, train_envs, test_envs, max_epochs=2))
    torch.save(_saved_replica(algorithm, train_envs, info, initial), out_dir / f"{ranks.rank}.pt")


def _train_reinforce_replica(ranks: DataParallel, out_dir: Path) -> None:
    """REINFORCE with standardised returns, whose statistics live in a helper object."""
    env, train_envs, test_envs = _normalising_envs(ranks)
    reinforce = build_reinforce(reinforce_args(ON_POLICY_OPTIONS), env)
    ranks.attach(reinforce, train_envs)
    initial = copy.deepcopy(reinforce.policy.state_dict())
    info = reinforce.run_training(_on_policy_params(reinforce, train_envs, test_envs, max_epochs=2))
    replica = _saved_replica(reinforce, train_envs, info, initial)
    ret_rms = reinforce.discounted_return_computation.ret_rms
    replica["ret_rms"] = (ret_rms.mean, ret_rms.var, ret_rms.count)
    torch.save(replica, out_dir / f"{ranks.rank}.pt")


def _train_off_policy_replica(
    ranks: DataParallel, algorithm: Algorithm, train_envs: Any, out_dir: Path
) -> None:
    """Attach ``algorithm``, warm up with random steps, train two epochs of 40 env steps (both
    ranks together) and save the replica."""
    ranks.attach(algorithm, train_envs)
    initial = copy.deepcopy(algorithm.policy.state_dict())
    collector = Collector(
        algorithm, train_envs, VectorReplayBuffer(500, ENVS_PER_RANK), exploration_noise=True
    )
    collector.reset()
    collector.collect(n_step=64, random=True)
    info = algorithm.run_training(
        OffPolicyTrainerParams(
            training_collector=collector,
            max_epochs=2,
            epoch_num_steps=40,
            collection_step_num_env_steps=10,
            update_step_num_gradient_steps_per_sample=0.5,
            batch_size=32,
            show_progress=False,
        )
    )
    torch.save(_saved_replica(algorithm, train_envs, info, initial), out_dir / f"{ranks.rank}.pt")


def _train_sac_replica(ranks: DataParallel, out_dir: Path) -> None:
    """SAC with a learned entropy coefficient (whose optimizer AutoAlpha steps itself)."""
    torch.manual_seed(ranks.rank)
    args = sac_args(["--task", TASK, "--hidden-sizes", "8", "--device", "cpu", "--auto-alpha"])
    env, train_envs, _ = make_mujoco_env(
        TASK, 100 * ranks.rank, ENVS_PER_RANK, 1, obs_norm=False, backend="dummy"
    )
    _train_off_policy_replica(ranks, build_sac(args, env), train_envs, out_dir)


def _train_dqn_replica(ranks: DataParallel, out_dir: Path) -> None:
    """DQN with n-step returns and a target network copied every 3 updates."""
    torch.manual_seed(ranks.rank)
    train_envs = DummyVectorEnv([lambda: gym.make("CartPole-v1") for _ in range(ENVS_PER_RANK)])
    train_envs.seed(100 * ranks.rank)
    policy = DiscreteQLearningPolicy(
        model=Net(state_shape=4, action_shape=2, hidden_sizes=[8]),
        action_space=gym.spaces.Discrete(2),
        eps_training=0.1,
    )
    dqn = DQN(
        policy=policy,
        optim=AdamOptimizerFactory(lr=1e-3),
        n_step_return_horizon=2,
        target_update_freq=3,
    )
    _train_off_policy_replica(ranks, dqn, train_envs, out_dir)


def _assert_bit_identical(first: Any, second: Any, where: str = "") -> None:
    if isinstance(first, torch.Tensor):
        assert torch.equal(first, second), f"{where} differs between the ranks"
    elif isinstance(first, dict):
        assert first.keys() == second.keys(), where
        for key in first:
            _assert_bit_identical(first[key], second[key], f"{where}.{key}")
    elif isinstance(first, list | tuple):
        assert len(first) == len(second), where
        for i, (a, b) in enumerate(zip(first, second, strict=True)):
            _assert_bit_identical(a, b, f"{where}[{i}]")
    else:
        np.testing.assert_array_equal(first, second, err_msg=where)


def _policy_changed(replica: dict) -> bool:
    final = replica["state"]
    return any(
        not torch.equal(value, final[f"policy.{key}"]) for key, value in replica["initial"].items()
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("rank_fn", "epoch_env_steps"),
    [
        (_train_ppo_replica, PPO_EPOCH_ENV_STEPS),
        (_train_reinforce_replica, PPO_EPOCH_ENV_STEPS),
        (_train_sac_replica, 40),
        (_train_dqn_replica, 40),
    ],
    ids=["PPO", "REINFORCE", "SAC", "DQN"],
)
def test_two_ranks_train_bit_identical_replicas(
    rank_fn: Any, epoch_env_steps: int, tmp_path: Path
) -> None:
    run_ranks(rank_fn, 2, tmp_path)
    rank0, rank1 = (torch.load(tmp_path / f"{r}.pt", weights_only=False) for r in range(2))
    _assert_bit_identical(rank0["state"], rank1["state"], "state")
    _assert_bit_identical(rank0["obs_rms"], rank1["obs_rms"], "obs_rms")
    _assert_bit_identical(rank0.get("ret_rms"), rank1.get("ret_rms"), "ret_rms")
    assert _policy_changed(rank0), "training left the policy unchanged"
    # an epoch's env steps are those of both ranks, so two epochs end after 2 * epoch_env_steps
    assert rank0["train_step"] == rank1["train_step"] == 2 * epoch_env_steps
    assert rank0["update_step"] == rank1["update_step"]
    if rank0["obs_rms"] is not None:  # merged over both ranks' observations
        assert rank0["obs_rms"][2] >= rank0["train_step"]


def _sgd_ppo() -> PPO:
    """A PPO whose update is linear in the averaged gradient (SGD, no clipping or advantage
    normalisation), so a wrong gradient scale would show."""
    torch.manual_seed(0)
    args = _ppo_args()
    env, _, _ = make_mujoco_env(TASK, 0, 1, 1, obs_norm=False, backend="dummy")
    actor, critic = on_policy_actor_critic(args, env)
    return PPO(
        policy=gaussian_policy(args, actor, env),
        critic=critic,
        optim=TorchOptimizerFactory(torch.optim.SGD, lr=0.1),
        advantage_normalization=False,
        return_scaling=True,
        ent_coef=0.01,
    )


def _add_rollout(buffer: ReplayBuffer, rank: int, steps: int = 8) -> ReplayBuffer:
    """Add ``steps`` made-up transitions of rank ``rank`` to ``buffer``: an episode terminating
    in the middle, the next truncated at the end (so that rollouts can be laid end to end)."""
    rng = np.random.default_rng(rank)
    for t in range(steps):
        buffer.add(
            Batch(
                obs=rng.normal(size=3),
                act=rng.uniform(-2, 2, size=1),
                rew=float(rng.normal()),
                terminated=t == steps // 2,
                truncated=t == steps - 1,
                obs_next=rng.normal(size=3),
                info={},
            )
        )
    return buffer


def _update_on(algorithm: PPO, buffer: ReplayBuffer) -> None:
    with policy_within_training_step(algorithm.policy):
        algorithm.update(buffer=buffer, batch_size=len(buffer), repeat=1)


def _update_one_rank(ranks: DataParallel, out_dir: Path) -> None:
    algorithm = _sgd_ppo()
    ranks.attach(algorithm)
    _update_on(algorithm, _add_rollout(ReplayBuffer(8), ranks.rank))
    ranks.merge_running_stats()
    rms = algorithm.ret_rms
    torch.save((algorithm.state_dict(), rms.mean, rms.var), out_dir / f"{ranks.rank}.pt")


def _float_tensors(state: dict[str, Any]) -> dict[str, torch.Tensor]:
    return {
        key: value
        for key, value in state.items()
        if isinstance(value, torch.Tensor) and value.is_floating_point()
    }


@pytest.mark.slow
def test_a_two_rank_update_is_the_one_process_update_on_both_ranks_data(
    tmp_path: Path,
) -> None:
    run_ranks(_update_one_rank, 2, tmp_path)
    reference = _sgd_ppo()
    union = ReplayBuffer(16)
    for rank in range(2):
        _add_rollout(union, rank)
    before = copy.deepcopy(_float_tensors(reference.state_dict()))
    _update_on(reference, union)
    after = _float_tensors(reference.state_dict())
    assert any(not torch.equal(before[key], value) for key, value in after.items())
    state, mean, var = torch.load(tmp_path / "0.pt", weights_only=False)
    for key, value in after.items():
        torch.testing.assert_close(state[key], value, rtol=1e-5, atol=1e-6, msg=key)
    np.testing.assert_allclose(mean, reference.ret_rms.mean)
    np.testing.assert_allclose(var, reference.ret_rms.var)


def _check_config_with_rank_dependent_lr(ranks: DataParallel) -> None:
    ranks.check_same_config({"task": TASK, "lr": 1e-3 * (1 + ranks.rank)})


@pytest.mark.slow
def test_ranks_with_different_configurations_are_refused_naming_the_keys() -> None:
    with pytest.raises(mp.ProcessRaisedException) as raised:
        run_ranks(_check_config_with_rank_dependent_lr, 2)
    message = str(raised.value)
    assert "different configurations" in message
    assert "'lr': rank 0 has 0.001, rank 1 has 0.002" in message
    assert "'task'" not in message


def _fail_on_rank_1(ranks: DataParallel) -> None:
    ranks.sum_collection(1, 0, False)
    if ranks.rank == 1:
        raise RuntimeError("injected failure")
    ranks.sum_collection(1, 0, False)  # waits for rank 1, which has died


@pytest.mark.slow
def test_a_failing_rank_ends_the_job_soon_naming_the_rank_and_the_cause() -> None:
    start = time.monotonic()
    context = start_ranks(_fail_on_rank_1, 2)
    with pytest.raises(mp.ProcessRaisedException) as raised:
        while not context.join():
            pass
    assert time.monotonic() - start < 45
    assert "rank 1 of 2 failed: RuntimeError: injected failure" in str(raised.value)
    for process in context.processes:
        process.join(timeout=10)
        assert not process.is_alive()


def test_a_natural_gradient_algorithm_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    args = _ppo_args()
    env, _, _ = make_mujoco_env(TASK, 0, 1, 1, obs_norm=False, backend="dummy")
    actor, critic = on_policy_actor_critic(args, env)
    npg = NPG(policy=gaussian_policy(args, actor, env), critic=critic, optim=AdamOptimizerFactory())
    launcher_env = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port())}
    for name, value in {**launcher_env, "RANK": "0", "WORLD_SIZE": "1"}.items():
        monkeypatch.setenv(name, value)
    with (
        pytest.raises(RuntimeError, match="NPG cannot be trained data-parallel"),
        data_parallel(timeout_s=10) as ranks,
    ):
        ranks.attach(npg)


def test_a_single_process_sums_and_decides_alone() -> None:
    totals = SINGLE_PROCESS.sum_collection(30, 2, True)
    assert (totals.env_steps, totals.episodes, totals.any_wants_test) == (30, 2, True)
    assert SINGLE_PROCESS.decision_of_reporter((1, 2)) == (1, 2)
    assert SINGLE_PROCESS.is_reporting and SINGLE_PROCESS.world_size == 1


def test_differing_config_keys_names_each_key_with_every_ranks_value() -> None:
    configs = [{"lr": "0.1", "task": "'A'"}, {"lr": "0.2", "task": "'A'", "extra": "1"}]
    assert differing_config_keys(configs) == [
        "'extra': rank 0 has <missing>, rank 1 has 1",
        "'lr': rank 0 has 0.1, rank 1 has 0.2",
    ]


def _logger_on_rank_0(ranks: DataParallel, log_dir: Path) -> BaseLogger:
    """Rank 0's log; the other ranks (whose trainers would not write anyway) log nowhere."""
    return TensorboardLogger(SummaryWriter(str(log_dir))) if ranks.is_reporting else LazyLogger()


def _train_ppo_one_epoch_with_checkpoint(ranks: DataParallel, out_dir: Path) -> None:
    algorithm, train_envs, test_envs = _ppo_on_rank(ranks)
    ranks.attach(algorithm, train_envs)

    def save_checkpoint(epoch: int, env_step: int, update_step: int) -> str:
        path = out_dir / "checkpoint.pt"
        torch.save({"algorithm": algorithm.state_dict(), "obs_rms": train_envs.obs_rms}, path)
        return str(path)

    params = _on_policy_params(
        algorithm,
        train_envs,
        test_envs,
        max_epochs=1,
        logger=_logger_on_rank_0(ranks, out_dir / "log"),
        save_checkpoint_fn=save_checkpoint,
    )
    algorithm.run_training(params)


def _resume_ppo_from_rank_0s_checkpoint(ranks: DataParallel, out_dir: Path) -> None:
    algorithm, train_envs, test_envs = _ppo_on_rank(ranks)
    if ranks.is_reporting:  # the other ranks never read the checkpoint
        checkpoint = torch.load(out_dir / "checkpoint.pt", weights_only=False)
        algorithm.load_state_dict(checkpoint["algorithm"])
        train_envs.set_obs_rms(checkpoint["obs_rms"])
        test_envs.set_obs_rms(checkpoint["obs_rms"])
    ranks.attach(algorithm, train_envs)
    attached = copy.deepcopy(algorithm.state_dict())
    obs_rms = train_envs.obs_rms
    assert isinstance(obs_rms, RunningMeanStd)
    attached_obs_rms = (obs_rms.mean, obs_rms.var, obs_rms.count)
    params = _on_policy_params(
        algorithm,
        train_envs,
        test_envs,
        max_epochs=2,
        logger=_logger_on_rank_0(ranks, out_dir / "log"),
        resume_from_log=True,
    )
    info = algorithm.run_training(params)
    replica = _saved_replica(algorithm, train_envs, info, {})
    replica |= {"attached": attached, "attached_obs_rms": attached_obs_rms}
    torch.save(replica, out_dir / f"resumed{ranks.rank}.pt")


@pytest.mark.slow
def test_a_checkpoint_of_rank_0_resumes_every_rank_with_its_state_and_counters(
    tmp_path: Path,
) -> None:
    run_ranks(_train_ppo_one_epoch_with_checkpoint, 2, tmp_path)
    checkpoint = torch.load(tmp_path / "checkpoint.pt", weights_only=False)
    run_ranks(_resume_ppo_from_rank_0s_checkpoint, 2, tmp_path)
    rank0, rank1 = (torch.load(tmp_path / f"resumed{r}.pt", weights_only=False) for r in (0, 1))
    saved_rms = checkpoint["obs_rms"]
    for replica in (rank0, rank1):
        # weights, optimizer and scheduler states, return statistics: the checkpoint's
        _assert_bit_identical(replica["attached"], checkpoint["algorithm"], "attached state")
        _assert_bit_identical(
            replica["attached_obs_rms"], (saved_rms.mean, saved_rms.var, saved_rms.count)
        )
        # the counters continue from the checkpoint's epoch: one more epoch of env steps
        assert replica["train_step"] == 2 * PPO_EPOCH_ENV_STEPS
        assert replica["update_step"] == 2 * PPO_EPOCH_ENV_STEPS // (2 * 30)
    _assert_bit_identical(rank0["state"], rank1["state"], "state")
    _assert_bit_identical(rank0["obs_rms"], rank1["obs_rms"], "obs_rms")


def _ppo_run_with_rank_checkpoints(ranks: DataParallel, out_dir: Path, part: str) -> None:
    """One part of a 2-rank PPO run of 2 epochs: ``"whole"`` (uninterrupted), ``"first"`` (epoch
    1, every rank saving its own part of the checkpoint) or ``"rest"`` (a new job resuming from
    that checkpoint, from freshly built replicas)."""
    np.random.seed(ranks.rank)  # the buffer's minibatches
    torch.manual_seed(0 if part != "rest" else 1234)  # a resumed replica starts elsewhere
    algorithm, train_envs, test_envs = _ppo_on_rank(ranks)
    training = Collector(algorithm, train_envs, VectorReplayBuffer(60, ENVS_PER_RANK))
    test = Collector(algorithm, test_envs)
    own_part = out_dir / f"checkpoint.rank{ranks.rank}.pkl"
    if part == "rest":
        saved = pickle.loads(own_part.read_bytes())
        if ranks.is_reporting:  # the shared state: rank 0's alone, as attach spreads it
            algorithm.load_state_dict(torch.load(io.BytesIO(saved["algorithm"])))
        training, test = pickle.loads(saved["collectors"])
        training.policy = test.policy = algorithm.policy
        train_envs = training.env
        saved["random_states"].restore()
    ranks.attach(algorithm, train_envs)

    def save_checkpoint(epoch: int, env_step: int, update_step: int) -> str:
        """Called on every rank: the shared state (rank 0) and the rank's own envs, buffer
        and random streams."""
        state = io.BytesIO()
        torch.save(algorithm.state_dict(), state)
        own_part.write_bytes(
            pickle.dumps(
                {
                    "algorithm": state.getvalue() if ranks.is_reporting else None,
                    "collectors": pickle.dumps((training, test)),
                    "random_states": GlobalRandomStates.capture(),
                }
            )
        )
        return str(own_part)

    log_dir = out_dir / ("whole-log" if part == "whole" else "log")
    params = _on_policy_params(
        algorithm,
        train_envs,
        test_envs,
        training_collector=training,
        test_collector=test,
        max_epochs=1 if part == "first" else 2,
        logger=_logger_on_rank_0(ranks, log_dir),
        save_checkpoint_fn=save_checkpoint if part == "first" else None,
        resume_from_log=part == "rest",
    )
    algorithm.create_trainer(params).run(reset_collectors=part != "rest")
    torch.save(algorithm.state_dict(), out_dir / f"{part}.rank{ranks.rank}.pt")


@pytest.mark.slow
def test_a_two_rank_run_resumed_from_its_checkpoint_ends_as_the_uninterrupted_run(
    tmp_path: Path,
) -> None:
    """Rank 0's checkpoint holds the shared state, and every rank saves its own envs, buffer
    and random streams at the same point (the trainer calls ``save_checkpoint_fn`` on every
    rank): the resumed job retraces the uninterrupted one bit for bit."""
    for part in ("whole", "first", "rest"):
        run_ranks(_ppo_run_with_rank_checkpoints, 2, tmp_path, part)
    for rank in (0, 1):
        whole = torch.load(tmp_path / f"whole.rank{rank}.pt")
        resumed = torch.load(tmp_path / f"rest.rank{rank}.pt")
        _assert_bit_identical(resumed, whole, f"rank {rank}'s state")
        _assert_bit_identical(
            getattr(resumed, "_metadata", {}), getattr(whole, "_metadata", {}), "metadata"
        )
