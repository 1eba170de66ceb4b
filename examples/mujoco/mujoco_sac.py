"""Soft Actor-Critic on a MuJoCo task, with the benchmark hyper-parameters.

Haarnoja et al., "Soft Actor-Critic Algorithms and Applications" (2018): 256x256 networks,
batch 256, actor lr 1e-3, critic lr 1e-3 (3e-4 in the paper), tau 0.005, gamma 0.99, entropy
coefficient tuned automatically towards ``-dim(A)``, 10k uniformly random start steps.

    python examples/mujoco/mujoco_sac.py --task Hopper-v5 --seed 0
    python examples/mujoco/mujoco_sac.py --watch --resume-path log/Hopper-v5/sac/0/policy.pth
"""

import argparse
import os
from collections.abc import Sequence

import numpy as np
import torch
from torch.utils.tensorboard import SummaryWriter

from tianshou.algorithm import SAC
from tianshou.algorithm.modelfree.sac import AutoAlpha, SACPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import Collector, CollectStats, InfoStats, VectorReplayBuffer
from tianshou.trainer import OffPolicyTrainerParams
from tianshou.utils.logger.tensorboard import TensorboardLogger
from tianshou.utils.net.common import Net
from tianshou.utils.net.continuous import (
    ContinuousActorProbabilistic,
    ContinuousCritic,
)

from mujoco_env import make_mujoco_env  # the script's own directory is on sys.path


def get_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--task", default="Hopper-v5")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--buffer-size", type=int, default=1_000_000)
    parser.add_argument("--hidden-sizes", type=int, nargs="*", default=[256, 256])
    parser.add_argument("--actor-lr", type=float, default=1e-3)
    parser.add_argument("--critic-lr", type=float, default=1e-3)
    parser.add_argument("--alpha-lr", type=float, default=3e-4)
    parser.add_argument("--gamma", type=float, default=0.99)
    parser.add_argument("--tau", type=float, default=0.005)
    parser.add_argument("--alpha", type=float, default=0.2, help="fixed alpha (--no-auto-alpha)")
    parser.add_argument("--auto-alpha", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--start-timesteps", type=int, default=10_000)
    parser.add_argument("--epoch", type=int, default=200)
    parser.add_argument("--epoch-num-steps", type=int, default=5000)
    parser.add_argument("--collection-step-num-env-steps", type=int, default=1)
    parser.add_argument("--update-per-step", type=float, default=1.0)
    parser.add_argument("--n-step", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--num-train-envs", type=int, default=1)
    parser.add_argument("--num-test-envs", type=int, default=10)
    parser.add_argument("--logdir", default="log")
    parser.add_argument("--render", type=float, default=0.0, help="seconds between frames")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--resume-path", default=None, help="a saved algorithm state to load")
    parser.add_argument("--watch", action="store_true", help="only evaluate the loaded policy")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    return parser.parse_args(argv)


def build_sac(args: argparse.Namespace, env: "object") -> SAC:
    """The SAC algorithm for ``env``'s spaces, with the networks and optimisers of ``args``."""
    obs_shape = env.observation_space.shape  # type: ignore[attr-defined]
    act_shape = env.action_space.shape  # type: ignore[attr-defined]
    actor = ContinuousActorProbabilistic(
        preprocess_net=Net(state_shape=obs_shape, hidden_sizes=args.hidden_sizes),
        action_shape=act_shape,
        unbounded=True,
        conditioned_sigma=True,
    ).to(args.device)

    def critic() -> ContinuousCritic:
        net = Net(
            state_shape=obs_shape,
            action_shape=act_shape,
            hidden_sizes=args.hidden_sizes,
            concat=True,
        )
        return ContinuousCritic(preprocess_net=net).to(args.device)

    alpha: float | AutoAlpha = args.alpha
    if args.auto_alpha:
        alpha = AutoAlpha(
            target_entropy=-float(np.prod(act_shape)),
            log_alpha=0.0,
            optim=AdamOptimizerFactory(lr=args.alpha_lr),
        )
    policy = SACPolicy(actor=actor, action_space=env.action_space)  # type: ignore[attr-defined]
    return SAC(
        policy=policy,
        policy_optim=AdamOptimizerFactory(lr=args.actor_lr),
        critic=critic(),
        critic_optim=AdamOptimizerFactory(lr=args.critic_lr),
        critic2=critic(),
        critic2_optim=AdamOptimizerFactory(lr=args.critic_lr),
        tau=args.tau,
        gamma=args.gamma,
        alpha=alpha,
        n_step_return_horizon=args.n_step,
    ).to(args.device)


def main(argv: Sequence[str] | None = None) -> InfoStats | CollectStats:
    args = get_args(argv)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    env, train_envs, test_envs = make_mujoco_env(
        args.task,
        args.seed,
        args.num_train_envs,
        args.num_test_envs,
        obs_norm=False,
        test_render_mode="human" if args.watch and args.render > 0 else None,
    )
    algorithm = build_sac(args, env)
    if args.resume_path:
        algorithm.load_state_dict(torch.load(args.resume_path, map_location=args.device))
        print(f"loaded {args.resume_path}")
    test_collector = Collector[CollectStats](algorithm, test_envs)
    try:
        if args.watch:
            return watch(test_collector, args)
        result = train(algorithm, train_envs, test_collector, args)
        print(result)
        return result
    finally:
        train_envs.close()
        test_envs.close()


def train(
    algorithm: SAC,
    train_envs: "object",
    test_collector: Collector[CollectStats],
    args: argparse.Namespace,
) -> InfoStats:
    num_envs = len(train_envs)  # type: ignore[arg-type]
    buffer = VectorReplayBuffer(args.buffer_size, num_envs)
    train_collector = Collector[CollectStats](algorithm, train_envs, buffer, exploration_noise=True)
    train_collector.reset()
    train_collector.collect(n_step=args.start_timesteps, random=True)
    log_path = os.path.join(args.logdir, args.task, "sac", str(args.seed))
    logger = TensorboardLogger(SummaryWriter(log_path))
    logger.writer.add_text("args", str(vars(args)))

    def save_best_fn(alg: torch.nn.Module) -> None:
        torch.save(alg.state_dict(), os.path.join(log_path, "policy.pth"))

    return algorithm.run_training(
        OffPolicyTrainerParams(
            training_collector=train_collector,
            test_collector=test_collector,
            max_epochs=args.epoch,
            epoch_num_steps=args.epoch_num_steps,
            collection_step_num_env_steps=args.collection_step_num_env_steps,
            test_step_num_episodes=args.num_test_envs,
            batch_size=args.batch_size,
            update_step_num_gradient_steps_per_sample=args.update_per_step,
            save_best_fn=save_best_fn,
            logger=logger,
            show_progress=not args.no_progress,
        )
    )


def watch(test_collector: Collector[CollectStats], args: argparse.Namespace) -> CollectStats:
    """Evaluate the loaded policy deterministically, rendering if ``--render`` is given."""
    test_collector.reset()
    stats = test_collector.collect(n_episode=args.num_test_envs, render=args.render or None)
    print(f"mean return {stats.returns.mean():.1f} over {len(stats.returns)} episodes")
    return stats


if __name__ == "__main__":
    main()
