"""Training speed: wall seconds to reach a return, and SAC update throughput against bare PyTorch.

Prints one JSON line per case:

(a) ``ppo_cartpole``: PPO until the mean test return over 10 episodes reaches 475 on CartPole-v1;
(b) ``sac_pendulum``: SAC until it reaches -250 on Pendulum-v1;
    both over 3 seeds, with the median wall seconds and env steps;
(c) ``ppo_hopper``: ``examples/mujoco/mujoco_ppo.py``'s PPO on Hopper-v5 for 100k env steps with
    8 envs: wall seconds and the final test return (median of 3 seeds);
(d) ``sac_update``: SAC gradient steps per second on Hopper-v5 shapes (batch 256, 256x256
    networks, auto alpha) next to ``benchmark/bare_sac.py``'s bare PyTorch update, the limit;
(e) ``c51_cartpole``: C51 until the mean test return reaches 195 on CartPole-v1;
(f) ``redq_pendulum``: REDQ until it reaches -250 on Pendulum-v1;
    both with the settings of their learning tests (``test/algorithm/modelfree/test_c51.py``,
    ``test_redq.py``), over 3 seeds, with the median wall seconds and env steps.

Everything runs on one torch thread so the cases do not fight over the machine's cores.

    python -m benchmark.train [--cases a b c d e f] [--seeds 0 1 2]
"""

import argparse
import functools
import tempfile
import time
from collections.abc import Callable, Sequence

import gymnasium as gym
import numpy as np
import torch

from benchmark.bare_sac import BareSAC
from benchmark.common import Case, emit, in_training_step, measure
from tianshou.algorithm import C51, PPO, REDQ, SAC, RandomActionPolicy
from tianshou.algorithm.modelfree.c51 import C51Policy
from tianshou.algorithm.modelfree.redq import REDQPolicy
from tianshou.algorithm.modelfree.reinforce import DiscreteActorPolicy
from tianshou.algorithm.modelfree.sac import AutoAlpha, SACPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import Collector, CollectStats, ReplayBuffer, VectorReplayBuffer
from tianshou.env import DummyVectorEnv
from tianshou.env.mujoco import make_mujoco_env
from tianshou.scripts.mujoco.ppo import build_ppo
from tianshou.scripts.mujoco.training import train_on_policy as train_ppo_mujoco
from tianshou.trainer import OffPolicyTrainerParams, OnPolicyTrainerParams
from tianshou.utils.host_memory import retain_freed_host_memory
from tianshou.utils.net.common import EnsembleLinear, Net
from tianshou.utils.net.continuous import ContinuousActorProbabilistic, ContinuousCritic
from tianshou.utils.net.discrete import DiscreteActor, DiscreteCritic

from examples.mujoco.mujoco_ppo import get_args as ppo_args
from examples.mujoco.mujoco_sac import build_sac
from examples.mujoco.mujoco_sac import get_args as sac_args

TEST_EPISODES = 10
# The example's defaults are the 1M-step benchmark settings. For a 100k-step budget, rollouts of
# 1024 steps (twice as many policy updates per env step), minibatches of 256 at lr 1e-3 and
# normalised advantages learn faster; the networks, GAE, clipping and schedule stay the same.
PPO_HOPPER_100K_ARGS = (
    "--collection-step-num-env-steps", "1024", "--batch-size", "256", "--lr", "1e-3",
    "--advantage-normalization",
)  # fmt: skip


def seeded_envs(task: str, num: int, seed: int) -> DummyVectorEnv:
    envs = DummyVectorEnv([lambda: gym.make(task) for _ in range(num)])
    envs.seed(seed)
    return envs


def ppo_cartpole(seed: int) -> tuple[float, int, float]:
    """PPO on CartPole-v1 until 475; returns (wall seconds, env steps, best test return)."""
    torch.manual_seed(seed)
    np.random.seed(seed)
    space = gym.make("CartPole-v1").action_space
    training_envs, test_envs = (
        seeded_envs("CartPole-v1", 8, seed),
        seeded_envs("CartPole-v1", TEST_EPISODES, seed + 100),
    )

    def body() -> Net:
        return Net(state_shape=4, hidden_sizes=[64, 64], activation=torch.nn.Tanh)

    algorithm = PPO(
        policy=DiscreteActorPolicy(
            actor=DiscreteActor(preprocess_net=body(), action_shape=2),
            dist_fn=torch.distributions.Categorical,
            action_space=space,
            deterministic_eval=True,
        ),
        critic=DiscreteCritic(preprocess_net=body()),
        optim=AdamOptimizerFactory(lr=1e-3),
        gamma=0.99,
        gae_lambda=0.95,
        max_grad_norm=0.5,
    )
    start = time.perf_counter()
    result = algorithm.run_training(
        OnPolicyTrainerParams(
            training_collector=Collector(algorithm, training_envs, VectorReplayBuffer(2056, 8)),
            test_collector=Collector(algorithm, test_envs),
            max_epochs=50,
            epoch_num_steps=2048,
            collection_step_num_env_steps=2048,
            update_step_num_repetitions=10,
            batch_size=256,
            test_step_num_episodes=TEST_EPISODES,
            stop_fn=lambda mean_return: mean_return >= 475,
            verbose=False,
            show_progress=False,
        )
    )
    return time.perf_counter() - start, result.train_step, result.best_reward


def sac_pendulum(seed: int) -> tuple[float, int, float]:
    """SAC on Pendulum-v1 until -250; returns (wall seconds, env steps, best test return).

    3-step returns and a test every 500 steps: Pendulum's reward is dense, so the longer horizon
    speeds up learning, and the frequent tests stop the run soon after the threshold is reached.
    """
    torch.manual_seed(seed)
    np.random.seed(seed)
    space = gym.make("Pendulum-v1").action_space
    training_envs, test_envs = (
        seeded_envs("Pendulum-v1", 4, seed),
        seeded_envs("Pendulum-v1", TEST_EPISODES, seed + 100),
    )

    def critic() -> ContinuousCritic:
        return ContinuousCritic(
            preprocess_net=Net(state_shape=3, action_shape=1, hidden_sizes=[64, 64], concat=True)
        )

    actor = ContinuousActorProbabilistic(
        preprocess_net=Net(state_shape=3, hidden_sizes=[64, 64]),
        action_shape=1,
        unbounded=True,
        conditioned_sigma=True,
    )
    algorithm = SAC(
        policy=SACPolicy(actor=actor, action_space=space),
        policy_optim=AdamOptimizerFactory(lr=1e-3),
        critic=critic(),
        critic_optim=AdamOptimizerFactory(lr=1e-3),
        critic2=critic(),
        critic2_optim=AdamOptimizerFactory(lr=1e-3),
        tau=0.005,
        gamma=0.99,
        alpha=AutoAlpha(-1.0, 0.0, AdamOptimizerFactory(lr=3e-4)),
        n_step_return_horizon=3,
    )
    start = time.perf_counter()
    result = algorithm.run_training(
        OffPolicyTrainerParams(
            training_collector=Collector(
                algorithm, training_envs, VectorReplayBuffer(20_000, 4), exploration_noise=True
            ),
            test_collector=Collector(algorithm, test_envs),
            max_epochs=40,
            epoch_num_steps=500,
            collection_step_num_env_steps=8,
            test_step_num_episodes=TEST_EPISODES,
            batch_size=128,
            update_step_num_gradient_steps_per_sample=1.0,
            stop_fn=lambda mean_return: mean_return >= -250,
            verbose=False,
            show_progress=False,
        )
    )
    return time.perf_counter() - start, result.train_step, result.best_reward


def c51_cartpole(seed: int) -> tuple[float, int, float]:
    """C51 on CartPole-v1 until 195; returns (wall seconds, env steps, best test return).

    The settings of ``test/algorithm/modelfree/test_c51.py``: 3x128 networks, 51 atoms on
    [-10, 10], 3-step returns, epsilon decaying from 0.5 to 0.05 over 10k steps.
    """
    torch.manual_seed(seed)
    np.random.seed(seed)
    training_envs, test_envs = (
        seeded_envs("CartPole-v1", 8, seed),
        seeded_envs("CartPole-v1", TEST_EPISODES, seed + 100),
    )
    net = Net(
        state_shape=4, action_shape=2, hidden_sizes=[128, 128, 128], softmax=True, num_atoms=51
    )
    policy = C51Policy(
        model=net,
        action_space=gym.make("CartPole-v1").action_space,
        num_atoms=51,
        v_min=-10.0,
        v_max=10.0,
        eps_training=0.5,
    )
    algorithm = C51(
        policy=policy,
        optim=AdamOptimizerFactory(lr=1e-3),
        gamma=0.9,
        n_step_return_horizon=3,
        target_update_freq=320,
    )

    def decay_eps(epoch: int, env_step: int) -> None:
        policy.set_eps_training(max(0.05, 0.5 * (1 - env_step / 10000)))

    start = time.perf_counter()
    result = algorithm.run_training(
        OffPolicyTrainerParams(
            training_collector=Collector(
                algorithm, training_envs, VectorReplayBuffer(20_000, 8), exploration_noise=True
            ),
            test_collector=Collector(algorithm, test_envs),
            max_epochs=20,
            epoch_num_steps=1000,
            collection_step_num_env_steps=16,
            test_step_num_episodes=TEST_EPISODES,
            batch_size=64,
            update_step_num_gradient_steps_per_sample=0.5,
            training_fn=decay_eps,
            stop_fn=lambda mean_return: mean_return >= 195,
            verbose=False,
            show_progress=False,
        )
    )
    return time.perf_counter() - start, result.train_step, result.best_reward


def redq_pendulum(seed: int) -> tuple[float, int, float]:
    """REDQ on Pendulum-v1 until -250; returns (wall seconds, env steps, best test return).

    The settings of ``test/algorithm/modelfree/test_redq.py``: 64x64 networks, 10 critics
    (``EnsembleLinear``), subsets of 2, one critic and one actor step per env step, learned alpha.
    """
    torch.manual_seed(seed)
    np.random.seed(seed)
    space = gym.make("Pendulum-v1").action_space
    training_envs, test_envs = (
        seeded_envs("Pendulum-v1", 4, seed),
        seeded_envs("Pendulum-v1", TEST_EPISODES, seed + 100),
    )
    actor = ContinuousActorProbabilistic(
        preprocess_net=Net(state_shape=3, hidden_sizes=[64, 64]),
        action_shape=1,
        unbounded=True,
        conditioned_sigma=True,
    )
    linear = functools.partial(EnsembleLinear, 10)
    body = Net(
        state_shape=3, action_shape=1, hidden_sizes=[64, 64], concat=True, linear_layer=linear
    )
    algorithm = REDQ(
        policy=REDQPolicy(actor=actor, action_space=space),
        policy_optim=AdamOptimizerFactory(lr=1e-3),
        critic=ContinuousCritic(preprocess_net=body, linear_layer=linear, flatten_input=False),
        critic_optim=AdamOptimizerFactory(lr=1e-3),
        ensemble_size=10,
        subset_size=2,
        actor_delay=1,
        alpha=AutoAlpha(-1.0, 0.0, AdamOptimizerFactory(lr=3e-4)),
    )
    start = time.perf_counter()
    result = algorithm.run_training(
        OffPolicyTrainerParams(
            training_collector=Collector(
                algorithm, training_envs, VectorReplayBuffer(20_000, 4), exploration_noise=True
            ),
            test_collector=Collector(algorithm, test_envs),
            max_epochs=8,
            epoch_num_steps=1000,
            collection_step_num_env_steps=8,
            test_step_num_episodes=TEST_EPISODES,
            batch_size=128,
            update_step_num_gradient_steps_per_sample=1.0,
            stop_fn=lambda mean_return: mean_return >= -250,
            verbose=False,
            show_progress=False,
        )
    )
    return time.perf_counter() - start, result.train_step, result.best_reward


def ppo_hopper(
    seed: int, extra_args: Sequence[str] = PPO_HOPPER_100K_ARGS
) -> tuple[float, int, float]:
    """The MuJoCo example's PPO on Hopper-v5 for 100k env steps; (wall s, env steps, final return).

    Five epochs of 20,480 steps (twenty collections of 1024), so the linear learning-rate decay
    reaches zero at the end of the budget. The final return is a separate, untimed evaluation
    of the trained policy over 10 episodes.
    """
    args = ppo_args(
        [
            "--seed", str(seed), "--epoch", "5", "--epoch-num-steps", "20480",
            "--num-training-envs", "8", "--num-test-envs", str(TEST_EPISODES), "--no-progress",
            *extra_args,
        ]
    )  # fmt: skip
    torch.manual_seed(seed)
    np.random.seed(seed)
    env, train_envs, test_envs = make_mujoco_env(
        args.task, seed, args.num_training_envs, args.num_test_envs, obs_norm=True
    )
    algorithm = build_ppo(args, env)
    test_collector = Collector[CollectStats](algorithm, test_envs)
    try:
        with tempfile.TemporaryDirectory() as log_path:
            start = time.perf_counter()
            result = train_ppo_mujoco(algorithm, train_envs, test_collector, log_path, args)
            wall = time.perf_counter() - start
        test_collector.reset()
        final = test_collector.collect(n_episode=TEST_EPISODES)
    finally:
        train_envs.close()
        test_envs.close()
    return wall, result.train_step, float(np.mean(final.returns))


def sac_update_case() -> Case:
    """The library's SAC as ``examples/mujoco/mujoco_sac.py`` builds it, updating on 20,000
    random Hopper-v5 transitions, next to the bare update of :class:`BareSAC`."""
    args = sac_args(["--num-test-envs", "1"])
    env = gym.make(args.task)
    algorithm = build_sac(args, env)
    buffer = fill_random(env, 20_000)
    return Case(
        "sac",
        f"Hopper-v5 obs 11, act 3, 256x256, batch {args.batch_size}, learned alpha",
        in_training_step(algorithm, lambda: algorithm.update(buffer, args.batch_size)),
        BareSAC(20_000).update,
    )


def fill_random(env: gym.Env, steps: int) -> ReplayBuffer:
    """A buffer of ``steps`` uniformly random transitions of ``env``."""
    venv = DummyVectorEnv([lambda: env])
    venv.seed(0)
    buffer = VectorReplayBuffer(steps, 1)
    collector = Collector[CollectStats](RandomActionPolicy(env.action_space), venv, buffer)
    collector.reset()
    collector.collect(n_step=steps, random=True)
    return buffer


def over_seeds(
    name: str,
    run: Callable[[int], tuple[float, int, float]],
    seeds: Sequence[int],
    **extra: float | str,
) -> None:
    """Run ``run`` once per seed and emit the medians and the per-seed figures.

    :param extra: more fields of the record; ``target_median_wall_s`` (a ceiling) and
        ``target_median_return`` (a floor) also decide its ``ok`` flag.
    """
    runs = [run(seed) for seed in seeds]
    walls, steps, returns = (np.array(column, dtype=float) for column in zip(*runs, strict=True))
    met = []  # one flag per target given in ``extra``
    if "target_median_wall_s" in extra:
        met.append(float(np.median(walls)) <= float(extra["target_median_wall_s"]))
    if "target_median_return" in extra:
        met.append(float(np.median(returns)) >= float(extra["target_median_return"]))
    emit(
        {
            "bench": name,
            "seeds": list(seeds),
            "median_wall_s": float(np.median(walls)),
            "median_env_steps": int(np.median(steps)),
            "median_return": float(np.median(returns)),
            "wall_s": walls.round(2).tolist(),
            "env_steps": steps.astype(int).tolist(),
            "returns": returns.round(1).tolist(),
            **extra,
            "ok": all(met) if met else None,
        }
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", nargs="*", default=["a", "b", "c", "d", "e", "f"])
    parser.add_argument("--seeds", type=int, nargs="*", default=[0, 1, 2])
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    retain_freed_host_memory()  # the trainers' allocator settings, for every side alike
    if "a" in args.cases:
        over_seeds("ppo_cartpole_to_475", ppo_cartpole, args.seeds, target_median_wall_s=6.5)
    if "b" in args.cases:
        over_seeds("sac_pendulum_to_-250", sac_pendulum, args.seeds, target_median_wall_s=7.0)
    if "c" in args.cases:
        over_seeds(
            "ppo_hopper_100k",
            ppo_hopper,
            args.seeds,
            target_median_wall_s=26.0,
            target_median_return=500.0,
            args=" ".join(PPO_HOPPER_100K_ARGS),
        )
    if "d" in args.cases:
        emit(measure(sac_update_case(), rounds=3, min_time=1.0, clock="wall"))
    if "e" in args.cases:
        over_seeds("c51_cartpole_to_195", c51_cartpole, args.seeds)
    if "f" in args.cases:
        over_seeds("redq_pendulum_to_-250", redq_pendulum, args.seeds)


if __name__ == "__main__":
    main()
