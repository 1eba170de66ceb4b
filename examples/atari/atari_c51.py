"""C51 (categorical distributional DQN) on an Atari game, with the published hyper-parameters.

Bellemare et al., "A Distributional Perspective on Reinforcement Learning" (2017): the return
of each action is a distribution on 51 atoms evenly spaced in [-10, 10], trained by the
cross-entropy to the projected n-step target distribution. The rest is DQN's Atari setting:
epsilon 1 -> 0.05 over 1M env steps (0.005 in tests), target network copied every 500
updates, batch 32, Adam with lr 1e-4, 3-step returns, a 100k-transition buffer, one update
per 10 env steps collected by 10 envs.

    python -m examples.atari.atari_c51 --task PongNoFrameskip-v4 --seed 0
    python -m examples.atari.atari_c51 --watch --resume-path log/PongNoFrameskip-v4/c51/0/policy.pth
"""

import argparse
from collections.abc import Sequence

from tianshou.algorithm import C51
from tianshou.algorithm.modelfree.c51 import C51Policy
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import CollectStats, InfoStats
from tianshou.env.atari.atari_network import C51Net
from tianshou.scripts.atari.cli import add_q_learning_arguments, atari_parser
from tianshou.scripts.atari.envs import AtariEnvs, scale_obs_if
from tianshou.scripts.atari.training import run_q_learning


def get_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = atari_parser(__doc__.split("\n")[0], off_policy=True)
    add_q_learning_arguments(parser)
    parser.add_argument("--num-atoms", type=int, default=51)
    parser.add_argument("--v-min", type=float, default=-10.0)
    parser.add_argument("--v-max", type=float, default=10.0)
    return parser.parse_args(argv)


def build_c51(args: argparse.Namespace, envs: AtariEnvs) -> C51:
    """C51 with a distributional Nature-DQN network for ``envs``' frames and actions."""
    c, h, w = envs.frame_shape
    net = C51Net(c=c, h=h, w=w, action_shape=envs.num_actions, num_atoms=args.num_atoms)
    policy = C51Policy(
        model=scale_obs_if(args.scale_obs, net).to(args.device),
        action_space=envs.env.action_space,
        num_atoms=args.num_atoms,
        v_min=args.v_min,
        v_max=args.v_max,
        eps_training=args.eps_train,
        eps_inference=args.eps_test,
    )
    return C51(
        policy=policy,
        optim=AdamOptimizerFactory(lr=args.lr),
        gamma=args.gamma,
        n_step_return_horizon=args.n_step_return_horizon,
        target_update_freq=args.target_update_freq,
    ).to(args.device)


def main(argv: Sequence[str] | None = None) -> InfoStats | CollectStats:
    return run_q_learning(get_args(argv), build_c51, "c51")


if __name__ == "__main__":
    main()
