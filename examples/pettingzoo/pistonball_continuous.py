"""Pistonball with continuous actions: one PPO per piston, each with a small CNN.

Each piston sets its speed in ``[-1, 1]`` (down to up) from its view of the screen, shrunk to a
48x12 grayscale image (see :class:`~tianshou.scripts.pistonball.PistonView`, which also
pays every move the team's reward for the ball's progress during it, so that each piston's own
moves carry its reward). A
Gaussian actor and a state-value critic each read the view with two convolutions;
:class:`~tianshou.algorithm.MultiAgentOnPolicyAlgorithm` updates each piston's PPO on the moves
that piston made. Sampled actions outside ``[-1, 1]`` are clipped by the view wrapper before
they reach the game (PPO learns from the unclipped samples).

The trained team is saved as ``policy.pth`` in the run's log directory. ``--watch`` loads it
(``--resume-path``) and, without training, plays a few episodes with the mean actions and prints
their returns (no window)::

    python -m examples.pettingzoo.pistonball_continuous --n-pistons 4 --epoch 10
    python -m examples.pettingzoo.pistonball_continuous --n-pistons 4 --watch \
        --resume-path log/pistonball_continuous/ppo/policy.pth
"""

import argparse
import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.distributions import Distribution, Independent, Normal
from torch.utils.tensorboard import SummaryWriter

from tianshou.algorithm import PPO
from tianshou.algorithm.algorithm_base import Algorithm, OnPolicyAlgorithm
from tianshou.algorithm.modelfree.reinforce import ProbabilisticActorPolicy
from tianshou.algorithm.multiagent.marl import MultiAgentOnPolicyAlgorithm
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import Collector, CollectStats, InfoStats, VectorReplayBuffer
from tianshou.env import DummyVectorEnv, PettingZooEnv
from tianshou.scripts.pistonball import get_env, print_episodes, team_return
from tianshou.scripts.summary import final_test_return, report_training
from tianshou.trainer import OnPolicyTrainerParams
from tianshou.utils.cli import (
    ArgumentParser,
    add_torch_threads_option,
    parse_known_options,
    torch_threads_from_args,
)
from tianshou.utils.logger.tensorboard import TensorboardLogger
from tianshou.utils.net.continuous import ContinuousActorProbabilistic, ContinuousCritic
from tianshou.utils.net.layers import ModuleWithVectorOutput


class PistonCNN(ModuleWithVectorOutput):
    """Features of a piston's view: two strided convolutions and a fully connected layer.

    :param c: channels of the view (1: grayscale).
    :param h: height of the view.
    :param w: width of the view.
    :param features: width of the output.
    """

    def __init__(self, c: int, h: int, w: int, features: int = 64) -> None:
        super().__init__(features)
        convs = nn.Sequential(
            nn.Conv2d(c, 8, kernel_size=4, stride=2),
            nn.ReLU(),
            nn.Conv2d(8, 16, kernel_size=3, stride=2),
            nn.ReLU(),
            nn.Flatten(),
        )
        with torch.no_grad():
            flat = int(convs(torch.zeros(1, c, h, w)).shape[1])
        self.net = nn.Sequential(convs, nn.Linear(flat, features), nn.ReLU())

    def forward(
        self, obs: np.ndarray | torch.Tensor, state: Any = None, info: Any = None
    ) -> tuple[torch.Tensor, Any]:
        """``(features, state)`` of uint8 views, with pixel values scaled to ``[0, 1]``."""
        device = next(self.parameters()).device
        return self.net(torch.as_tensor(obs, device=device, dtype=torch.float32) / 255.0), state


def gaussian(loc_scale: tuple[torch.Tensor, torch.Tensor]) -> Distribution:
    """A Gaussian over the piston's speed, from the actor's ``(mean, std)``."""
    return Independent(Normal(*loc_scale), 1)


def get_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(description=__doc__.splitlines()[0])
    add = parser.add_argument
    add("--seed", type=int, default=1626)
    add("--n-pistons", type=int, default=3)
    add("--max-cycles", type=int, default=125, help="cycles (moves of every piston) per episode")
    add("--obs-shape", type=int, nargs=2, default=[48, 12], help="height and width of the view")
    add("--lr", type=float, default=3e-4)
    add("--gamma", type=float, default=0.99, help="discount per move of the piston")
    add("--gae-lambda", type=float, default=0.95)
    add("--ent-coef", type=float, default=0.0)
    add("--vf-coef", type=float, default=0.5)
    add("--eps-clip", type=float, default=0.2)
    add("--max-grad-norm", type=float, default=0.5)
    add("--features", type=int, default=64, help="width of the CNN's output")
    add("--epoch", type=int, default=10)
    add("--epoch-num-steps", type=int, default=4000)
    add(
        "--collection-step-num-env-steps",
        type=int,
        default=1000,
        help="moves (of all pistons) per update",
    )
    add("--update-step-num-repetitions", type=int, default=4)
    add("--batch-size", type=int, default=128)
    add("--num-training-envs", type=int, default=10)
    add("--num-test-envs", type=int, default=10)
    add("--persistence-base-dir", type=str, default="log")
    add(
        "--watch",
        action="store_true",
        help="no training: play episodes of the --resume-path team's mean actions, print returns",
    )
    add("--watch-episodes", type=int, default=3)
    add("--resume-path", type=str, default="", help="saved pistons' algorithms to start from")
    add("--device", type=str, default="cuda" if torch.cuda.is_available() else "cpu")
    add_torch_threads_option(parser)
    return parser


def get_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    return parse_known_options(get_parser(), argv)


def make_ppo(args: argparse.Namespace, env: PettingZooEnv) -> PPO:
    """One piston's PPO: a Gaussian actor (mean and a free log std) and a critic, each on its
    own :class:`PistonCNN`."""
    c, h, w = env.observation_space.shape
    actor = ContinuousActorProbabilistic(
        preprocess_net=PistonCNN(c, h, w, features=args.features),
        action_shape=env.action_space.shape,
        unbounded=True,
    ).to(args.device)
    critic = ContinuousCritic(
        preprocess_net=PistonCNN(c, h, w, features=args.features),
        apply_preprocess_net_to_obs_only=True,
    ).to(args.device)
    nn.init.constant_(actor.sigma_param, -0.5)
    policy = ProbabilisticActorPolicy(
        actor=actor,
        dist_fn=gaussian,
        deterministic_eval=True,
        action_space=env.action_space,
        # the multi-agent policy passes actions on unchanged; the view wrapper clips them
        action_scaling=False,
        action_bound_method=None,
    )
    return PPO(
        policy=policy,
        critic=critic,
        optim=AdamOptimizerFactory(lr=args.lr),
        gamma=args.gamma,
        gae_lambda=args.gae_lambda,
        eps_clip=args.eps_clip,
        vf_coef=args.vf_coef,
        ent_coef=args.ent_coef,
        max_grad_norm=args.max_grad_norm,
    )


def get_agents(
    args: argparse.Namespace, agents: list[OnPolicyAlgorithm] | None = None
) -> tuple[MultiAgentOnPolicyAlgorithm, list[str]]:
    """The pistons' algorithms (new ones, or ``agents``) as one multi-agent algorithm, and the
    pistons' ids; ``--resume-path`` loads saved weights into the new ones."""
    env = get_env(args, continuous=True)
    if agents is None:
        agents = [make_ppo(args, env) for _ in env.agents]
        algorithm = MultiAgentOnPolicyAlgorithm(algorithms=agents, env=env)
        if args.resume_path:
            algorithm.load_state_dict(torch.load(args.resume_path, map_location=args.device))
        return algorithm, env.agents
    return MultiAgentOnPolicyAlgorithm(algorithms=agents, env=env), env.agents


def train_agent(
    args: argparse.Namespace, agents: list[OnPolicyAlgorithm] | None = None
) -> tuple[InfoStats, MultiAgentOnPolicyAlgorithm]:
    """Train the pistons; return the run's stats and the trained multi-agent algorithm."""
    train_envs = DummyVectorEnv(
        [lambda: get_env(args, continuous=True) for _ in range(args.num_training_envs)]
    )
    test_envs = DummyVectorEnv(
        [lambda: get_env(args, continuous=True) for _ in range(args.num_test_envs)]
    )
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    train_envs.seed(args.seed)
    test_envs.seed(args.seed + args.num_training_envs)
    algorithm, _ = get_agents(args, agents)
    log_path = os.path.join(args.persistence_base_dir, "pistonball_continuous", "ppo")

    def save_best_fn(best: Algorithm) -> None:
        os.makedirs(log_path, exist_ok=True)
        torch.save(best.state_dict(), os.path.join(log_path, "policy.pth"))

    test_collector = Collector[CollectStats](algorithm, test_envs)
    result = algorithm.run_training(
        OnPolicyTrainerParams(
            training_collector=Collector[CollectStats](
                algorithm,
                train_envs,
                VectorReplayBuffer(args.collection_step_num_env_steps, len(train_envs)),
            ),
            test_collector=test_collector,
            max_epochs=args.epoch,
            epoch_num_steps=args.epoch_num_steps,
            collection_step_num_env_steps=args.collection_step_num_env_steps,
            update_step_num_repetitions=args.update_step_num_repetitions,
            batch_size=args.batch_size,
            test_step_num_episodes=args.num_test_envs,
            multi_agent_return_reduction=team_return,
            save_best_fn=save_best_fn,
            logger=TensorboardLogger(SummaryWriter(log_path)),
            show_progress=False,
        )
    )
    report_training(
        task="pistonball_continuous",
        algorithm="ppo",
        info=result,
        final_test_return=final_test_return(test_collector, args.num_test_envs, team_return),
        log_dir=log_path,
        config=vars(args),
        policy_path=os.path.join(log_path, "policy.pth"),
    )
    return result, algorithm


def watch(
    args: argparse.Namespace, algorithm: MultiAgentOnPolicyAlgorithm | None = None
) -> CollectStats:
    """Play ``args.watch_episodes`` episodes with the pistons' mean actions, printing each
    episode's return and length in the terminal."""
    if algorithm is None:
        algorithm, _ = get_agents(args)
    algorithm.eval()
    envs = DummyVectorEnv([lambda: get_env(args, continuous=True)])
    envs.seed(args.seed)
    stats = Collector[CollectStats](algorithm, envs).collect(
        n_episode=args.watch_episodes, reset_before_collect=True
    )
    print_episodes(stats, args.n_pistons)
    return stats


def main(argv: Sequence[str] | None = None) -> InfoStats | CollectStats:
    """Train the pistons (from ``--resume-path``, if given); with ``--watch`` only play
    ``--watch-episodes`` episodes of the loaded team's mean actions."""
    args = get_args(argv)
    with torch_threads_from_args(args):
        if args.watch:
            if not args.resume_path:
                print("--watch without --resume-path: watching untrained agents", flush=True)
            return watch(args)
        info, _ = train_agent(args)
    return info


if __name__ == "__main__":
    main()
