"""The Atari example scripts train on Pong for a few hundred steps, save, resume and watch.

Pong episodes last thousands of frames, so every run cuts episodes at ``--max-episode-steps``.
"""

import importlib
import os
from pathlib import Path
from types import ModuleType, SimpleNamespace

import gymnasium as gym
import numpy as np
import pytest
import torch

from tianshou.data import CollectStats, InfoStats, VectorReplayBuffer
from tianshou.env import DummyVectorEnv

pytest.importorskip("ale_py", reason="the Atari scripts need the atari extra (ale-py)")
pytest.importorskip("cv2", reason="the Atari scripts need the atari extra (opencv)")

TASK = "PongNoFrameskip-v4"
EPISODE_STEPS = 40
TRAIN_STEPS = 200
TINY = [
    "--task",
    TASK,
    "--epoch",
    "1",
    "--epoch-num-steps",
    str(TRAIN_STEPS),
    "--num-train-envs",
    "2",
    "--num-test-envs",
    "1",
    "--buffer-size",
    "400",
    "--batch-size",
    "8",
    "--max-episode-steps",
    str(EPISODE_STEPS),
    "--no-progress",
]
SCRIPTS = {
    "atari_dqn": ("dqn", []),
    "atari_c51": ("c51", ["--num-atoms", "11"]),
    "atari_rainbow": ("rainbow", ["--num-atoms", "11"]),
    "atari_qrdqn": ("qrdqn", ["--num-quantiles", "8"]),
    "atari_iqn": ("iqn", ["--sample-size", "4", "--hidden-sizes", "32"]),
    "atari_fqf": ("fqf", ["--num-fractions", "4", "--hidden-sizes", "32"]),
    "atari_sac": ("sac", ["--hidden-size", "32", "--seed", "0"]),
    # underscores on purpose: published commands spell the options both ways
    "atari_ppo": (
        "ppo",
        ["--collection_step_num_env_steps", "100", "--batch_size", "50", "--seed", "0"],
    ),
}


def script(name: str) -> ModuleType:
    """The module of the Atari script ``name`` (``atari_dqn``)."""
    return importlib.import_module(f"examples.atari.{name}")


def train(module: ModuleType, args: list[str]) -> Path:
    """Train with ``args``; check the result and the files written; return the saved policy."""
    torch.set_num_threads(1)
    result = module.main(args)
    assert isinstance(result, InfoStats)
    assert result.train_step >= TRAIN_STEPS
    assert result.update_step > 0
    algo_name, _ = SCRIPTS[module.__name__.rpartition(".")[2]]
    log_dir = Path(args[args.index("--logdir") + 1]) / TASK / algo_name / "0"
    assert (log_dir / "policy.pth").exists()
    assert any(name.startswith("events.out.tfevents") for name in os.listdir(log_dir))
    return log_dir / "policy.pth"


def watch(module: ModuleType, args: list[str], *extra: str) -> CollectStats:
    stats = module.main([*args, "--watch", *extra])
    assert isinstance(stats, CollectStats)
    return stats


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("module_name", list(SCRIPTS))
def test_script_trains_saves_resumes_and_watches(
    module_name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    module = script(module_name)
    args = [*TINY, *SCRIPTS[module_name][1], "--logdir", str(tmp_path)]
    policy = train(module, args)
    capsys.readouterr()
    stats = watch(module, args, "--resume-path", str(policy))
    assert f"loaded {policy}" in capsys.readouterr().out
    # one test episode, cut at --max-episode-steps (a Pong game lasts far longer)
    assert stats.n_collected_episodes == 1
    assert stats.lens.tolist() == [EPISODE_STEPS]


def test_dqn_buffer_keeps_uint8_frames(tmp_path: Path) -> None:
    """Watching with --save-buffer-name writes the collected transitions as HDF5, storing each
    observation's newest 84x84 frame once, as uint8, and re-stacking 4 frames on sampling."""
    module = script("atari_dqn")
    saved = tmp_path / "buffer.hdf5"
    args = [*TINY, "--logdir", str(tmp_path), "--buffer-size", "64"]
    stats = watch(module, args, "--save-buffer-name", str(saved))
    assert stats.n_collected_steps >= 64
    buffer = VectorReplayBuffer.load_hdf5(str(saved))
    assert len(buffer) == 64
    assert buffer.obs.dtype == np.uint8
    assert buffer.obs.shape[1:] == (84, 84)
    batch, _ = buffer.sample(5)
    assert batch.obs.dtype == np.uint8
    assert batch.obs.shape == (5, 4, 84, 84)


def test_watch_with_render_and_no_display_warns_and_evaluates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    module = script("atari_qrdqn")
    args = [*TINY, *SCRIPTS["atari_qrdqn"][1], "--logdir", str(tmp_path)]
    with pytest.warns(UserWarning, match="needs a display"):
        stats = watch(module, args, "--render", "0.01")
    assert stats.n_collected_episodes == 1


@pytest.mark.parametrize("spelling", ["--epoch-num-steps", "--epoch_num_steps"])
def test_options_accept_dashes_and_underscores(spelling: str) -> None:
    module = script("atari_rainbow")
    args = module.get_args([spelling, "7", "--no_priority", "--beta-final", "0.5"])
    assert args.epoch_num_steps == 7
    assert args.no_priority
    assert args.beta_final == 0.5
    assert np.isclose(args.lr, 6.25e-5)


def test_epsilon_decays_linearly_over_the_first_million_steps() -> None:
    from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
    from tianshou.scripts.atari.training import epsilon_greedy_fns
    from tianshou.utils.logger.logger_base import LazyLogger

    args = script("atari_dqn").get_args([])
    policy = DiscreteQLearningPolicy(model=torch.nn.Identity(), action_space=gym.spaces.Discrete(6))
    training_fn, test_fn = epsilon_greedy_fns(policy, args, LazyLogger())
    for env_step, expected in [(0, 1.0), (500_000, 0.525), (1_000_000, 0.05), (3_000_000, 0.05)]:
        training_fn(0, env_step)
        assert policy.eps_training == pytest.approx(expected)
    test_fn(0, None)
    assert policy.eps_inference == 0.005


def test_training_stops_at_the_reward_threshold_or_when_pong_is_solved() -> None:
    from tianshou.scripts.atari.training import stop_fn

    pong_without_threshold = SimpleNamespace(spec=None)  # as ALE's Pong: no reward_threshold
    solved = stop_fn(pong_without_threshold, TASK)  # type: ignore[arg-type]
    assert solved(20.0)
    assert not solved(19.5)
    cartpole = gym.make("CartPole-v1")  # reward_threshold 475
    assert stop_fn(cartpole, "CartPole-v1")(475.0)
    assert not stop_fn(cartpole, "CartPole-v1")(474.0)


def test_rendering_test_envs_are_gymnasium_envs_in_this_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """EnvPool cannot render, so watching with --render uses gymnasium envs in this process
    (without a display they are built without a window)."""
    from tianshou.scripts.atari.envs import _rendering_envs

    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    args = script("atari_dqn").get_args(["--num-test-envs", "2"])
    envs = _rendering_envs(args)
    try:
        assert isinstance(envs, DummyVectorEnv)
        obs, _ = envs.reset()
        assert obs.shape == (2, 4, 84, 84)
        assert obs.dtype == np.uint8
    finally:
        envs.close()


def test_rainbow_anneals_beta_to_one_over_its_anneal_steps() -> None:
    module = script("atari_rainbow")
    from tianshou.scripts.atari.buffers import prioritized_replay_buffer
    from tianshou.utils.logger.logger_base import LazyLogger

    args = module.get_args(["--buffer-size", "16"])
    buffer = prioritized_replay_buffer(args, 2, alpha=args.alpha, beta=args.beta, weight_norm=True)
    anneal = module.beta_annealing_fn(buffer, args, LazyLogger())
    for env_step, expected in [(0, 0.4), (2_500_000, 0.7), (5_000_000, 1.0), (9_000_000, 1.0)]:
        anneal(0, env_step)
        assert buffer._beta == pytest.approx(expected)
        assert all(sub._beta == pytest.approx(expected) for sub in buffer.buffers)


ICM_OPTIONS = ["--icm-lr-scale", "0.5", "--icm-reward-scale", "0.02"]
ICM_SCRIPTS = {
    # script: (builder, ICM wrapper, ICM feature width, frames scaled in the ICM by default)
    "atari_dqn": ("build_dqn", "ICMOffPolicyWrapper", 3136, False),
    "atari_ppo": ("build_ppo", "ICMOnPolicyWrapper", 512, True),
}


@pytest.mark.parametrize("module_name", list(ICM_SCRIPTS))
def test_icm_options_wrap_the_algorithm_in_the_published_icm(module_name: str) -> None:
    from tianshou.algorithm.modelbased import icm
    from tianshou.env.atari.atari_network import ScaledObsInputActionReprNet

    module = script(module_name)
    builder, wrapper_name, feature_dim, scaled = ICM_SCRIPTS[module_name]
    envs = SimpleNamespace(
        env=SimpleNamespace(action_space=gym.spaces.Discrete(6)),
        frame_shape=(4, 84, 84),
        num_actions=6,
    )
    defaults = module.get_args(["--device", "cpu"])
    assert (defaults.icm_lr_scale, defaults.icm_reward_scale) == (0.0, 0.01)
    assert defaults.icm_forward_loss_weight == 0.2
    plain = getattr(module, builder)(defaults, envs)
    assert not isinstance(plain, icm.ICMOffPolicyWrapper | icm.ICMOnPolicyWrapper)

    args = module.get_args(["--device", "cpu", *ICM_OPTIONS, "--icm_forward_loss_weight", "0.3"])
    algorithm = getattr(module, builder)(args, envs)
    assert type(algorithm).__name__ == wrapper_name
    assert type(algorithm.wrapped_algorithm) is type(plain)
    assert (algorithm.lr_scale, algorithm.reward_scale, algorithm.forward_loss_weight) == (
        0.5,
        0.02,
        0.3,
    )
    assert algorithm.model.feature_dim == feature_dim
    assert isinstance(algorithm.model.feature_net.net, ScaledObsInputActionReprNet) == scaled
    frames = np.full((2, 4, 84, 84), 255, dtype=np.uint8)
    forward_error, act_logits = algorithm.model(frames, np.array([0, 5]), frames)
    assert forward_error.shape == (2,)
    assert act_logits.shape == (2, 6)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("module_name", list(ICM_SCRIPTS))
def test_script_with_icm_trains_saves_resumes_and_watches(
    module_name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    torch.set_num_threads(1)
    module = script(module_name)
    algo_name, options = SCRIPTS[module_name]
    args = [*TINY, *options, *ICM_OPTIONS, "--logdir", str(tmp_path)]
    result = module.main(args)
    assert isinstance(result, InfoStats)
    assert result.update_step > 0
    policy = tmp_path / TASK / f"{algo_name}_icm" / "0" / "policy.pth"
    state = torch.load(policy)
    assert any(key.startswith("model.forward_model.") for key in state)
    assert any(key.startswith("wrapped_algorithm.") for key in state)
    capsys.readouterr()
    stats = watch(module, args, "--resume-path", str(policy))
    assert f"loaded {policy}" in capsys.readouterr().out
    assert stats.lens.tolist() == [EPISODE_STEPS]
