"""Proximal Policy Optimisation on a MuJoCo task, with the benchmark hyper-parameters.

Schulman et al., "Proximal Policy Optimization Algorithms" (2017), with the implementation
choices of Andrychowicz et al., "What Matters in On-Policy RL" (2020): 64x64 tanh networks with
orthogonal initialisation, 2048 env steps per collection, 10 passes over them in minibatches of
64, GAE(0.95), observation normalisation, return scaling, linear learning-rate decay.

    python examples/mujoco/mujoco_ppo.py --task Hopper-v5 --seed 0
    python examples/mujoco/mujoco_ppo.py --watch --resume-path log/Hopper-v5/ppo/0/policy.pth
"""

import argparse
import os
import pickle
from collections.abc import Sequence

import numpy as np
import torch
from torch import nn
from torch.distributions import Distribution, Independent, Normal
from torch.utils.tensorboard import SummaryWriter

from tianshou.algorithm import PPO
from tianshou.algorithm.modelfree.reinforce import ProbabilisticActorPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory, LRSchedulerFactoryLinear
from tianshou.data import Collector, CollectStats, InfoStats, VectorReplayBuffer
from tianshou.env import BaseVectorEnv, VectorEnvNormObs
from tianshou.trainer import OnPolicyTrainerParams
from tianshou.utils.logger.tensorboard import TensorboardLogger
from tianshou.utils.net.common import Net
from tianshou.utils.net.continuous import ContinuousActorProbabilistic, ContinuousCritic

from mujoco_env import make_mujoco_env  # the script's own directory is on sys.path


def get_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--task", default="Hopper-v5")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--buffer-size", type=int, default=4096)
    parser.add_argument("--hidden-sizes", type=int, nargs="*", default=[64, 64])
    parser.add_argument("--lr", type=float, default=3e-4)
    parser.add_argument("--gamma", type=float, default=0.99)
    parser.add_argument("--epoch", type=int, default=100)
    parser.add_argument("--epoch-num-steps", type=int, default=30_000)
    parser.add_argument("--collection-step-num-env-steps", type=int, default=2048)
    parser.add_argument("--update-step-num-repetitions", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--num-train-envs", type=int, default=8)
    parser.add_argument("--num-test-envs", type=int, default=10)
    parser.add_argument("--return-scaling", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--vf-coef", type=float, default=0.25)
    parser.add_argument("--ent-coef", type=float, default=0.0)
    parser.add_argument("--gae-lambda", type=float, default=0.95)
    parser.add_argument("--lr-decay", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--max-grad-norm", type=float, default=0.5)
    parser.add_argument("--eps-clip", type=float, default=0.2)
    parser.add_argument("--dual-clip", type=float, default=None)
    parser.add_argument("--value-clip", action=argparse.BooleanOptionalAction, default=False)
    parser.add_argument(
        "--advantage-normalization", action=argparse.BooleanOptionalAction, default=False
    )
    parser.add_argument(
        "--recompute-advantage", action=argparse.BooleanOptionalAction, default=True
    )
    parser.add_argument(
        "--deterministic-eval",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="test with the mean action instead of sampling",
    )
    parser.add_argument(
        "--backend", default="auto", choices=["auto", "dummy", "subproc", "envpool"]
    )
    parser.add_argument("--logdir", default="log")
    parser.add_argument("--render", type=float, default=0.0, help="seconds between frames")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--resume-path", default=None, help="a saved algorithm state to load")
    parser.add_argument("--watch", action="store_true", help="only evaluate the loaded policy")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    return parser.parse_args(argv)


def gaussian(loc_scale: tuple[torch.Tensor, torch.Tensor]) -> Distribution:
    """A diagonal Gaussian over the action vector (one log-probability per action).

    The actor's output is the pair ``(loc, scale)``, passed whole to the distribution function.
    """
    loc, scale = loc_scale
    return Independent(Normal(loc, scale), 1)


def build_ppo(args: argparse.Namespace, env: "object") -> PPO:
    """PPO for ``env``'s spaces with orthogonally initialised 64x64 tanh networks."""
    obs_shape = env.observation_space.shape  # type: ignore[attr-defined]
    act_shape = env.action_space.shape  # type: ignore[attr-defined]
    actor = ContinuousActorProbabilistic(
        preprocess_net=Net(
            state_shape=obs_shape, hidden_sizes=args.hidden_sizes, activation=nn.Tanh
        ),
        action_shape=act_shape,
        unbounded=True,
    ).to(args.device)
    critic = ContinuousCritic(
        preprocess_net=Net(
            state_shape=obs_shape, hidden_sizes=args.hidden_sizes, activation=nn.Tanh
        )
    ).to(args.device)
    torch.nn.init.constant_(actor.sigma_param, -0.5)
    for module in [*actor.modules(), *critic.modules()]:
        if isinstance(module, nn.Linear):
            nn.init.orthogonal_(module.weight, gain=np.sqrt(2))
            nn.init.zeros_(module.bias)
    # A small last policy layer starts the policy near zero mean (Andrychowicz et al., 2020).
    for module in actor.mu.modules():
        if isinstance(module, nn.Linear):
            module.weight.data.mul_(0.01)
    optim = AdamOptimizerFactory(lr=args.lr)
    if args.lr_decay:
        optim = optim.with_lr_scheduler_factory(
            LRSchedulerFactoryLinear(
                max_epochs=args.epoch,
                epoch_num_steps=args.epoch_num_steps,
                collection_step_num_env_steps=args.collection_step_num_env_steps,
            )
        )
    policy = ProbabilisticActorPolicy(
        actor=actor,
        dist_fn=gaussian,
        deterministic_eval=args.deterministic_eval,
        action_space=env.action_space,  # type: ignore[attr-defined]
        action_scaling=True,
        action_bound_method="clip",
    )
    return PPO(
        policy=policy,
        critic=critic,
        optim=optim,
        gamma=args.gamma,
        gae_lambda=args.gae_lambda,
        max_grad_norm=args.max_grad_norm,
        vf_coef=args.vf_coef,
        ent_coef=args.ent_coef,
        return_scaling=args.return_scaling,
        eps_clip=args.eps_clip,
        value_clip=args.value_clip,
        dual_clip=args.dual_clip,
        advantage_normalization=args.advantage_normalization,
        recompute_advantage=args.recompute_advantage,
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
        obs_norm=True,
        backend=args.backend,
        test_render_mode="human" if args.watch and args.render > 0 else None,
    )
    algorithm = build_ppo(args, env)
    log_path = os.path.join(args.logdir, args.task, "ppo", str(args.seed))
    if args.resume_path:
        algorithm.load_state_dict(torch.load(args.resume_path, map_location=args.device))
        load_obs_rms(train_envs, test_envs, os.path.dirname(args.resume_path))
        print(f"loaded {args.resume_path}")
    test_collector = Collector[CollectStats](algorithm, test_envs)
    try:
        if args.watch:
            test_collector.reset()
            stats = test_collector.collect(n_episode=args.num_test_envs, render=args.render or None)
            print(f"mean return {stats.returns.mean():.1f} over {len(stats.returns)} episodes")
            return stats
        result = train(algorithm, train_envs, test_collector, log_path, args)
        print(result)
        return result
    finally:
        train_envs.close()
        test_envs.close()


def train(
    algorithm: PPO,
    train_envs: BaseVectorEnv,
    test_collector: Collector[CollectStats],
    log_path: str,
    args: argparse.Namespace,
) -> InfoStats:
    buffer = VectorReplayBuffer(args.buffer_size, len(train_envs))
    train_collector = Collector[CollectStats](algorithm, train_envs, buffer, exploration_noise=True)
    logger = TensorboardLogger(SummaryWriter(log_path))
    logger.writer.add_text("args", str(vars(args)))

    def save_best_fn(alg: torch.nn.Module) -> None:
        torch.save(alg.state_dict(), os.path.join(log_path, "policy.pth"))
        if isinstance(train_envs, VectorEnvNormObs):
            with open(os.path.join(log_path, "obs_rms.pkl"), "wb") as f:
                pickle.dump(train_envs.get_obs_rms(), f)

    return algorithm.run_training(
        OnPolicyTrainerParams(
            training_collector=train_collector,
            test_collector=test_collector,
            max_epochs=args.epoch,
            epoch_num_steps=args.epoch_num_steps,
            collection_step_num_env_steps=args.collection_step_num_env_steps,
            update_step_num_repetitions=args.update_step_num_repetitions,
            test_step_num_episodes=args.num_test_envs,
            batch_size=args.batch_size,
            save_best_fn=save_best_fn,
            logger=logger,
            show_progress=not args.no_progress,
        )
    )


def load_obs_rms(train_envs: BaseVectorEnv, test_envs: BaseVectorEnv, directory: str) -> None:
    """Restore the observation statistics saved next to a policy: it is only valid with them."""
    path = os.path.join(directory, "obs_rms.pkl")
    if not isinstance(train_envs, VectorEnvNormObs) or not os.path.exists(path):
        return
    with open(path, "rb") as f:
        obs_rms = pickle.load(f)
    train_envs.set_obs_rms(obs_rms)
    if isinstance(test_envs, VectorEnvNormObs):
        test_envs.set_obs_rms(obs_rms)


if __name__ == "__main__":
    main()
