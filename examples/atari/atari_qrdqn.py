"""QR-DQN (quantile regression DQN) on an Atari game, with the published hyper-parameters.

Dabney et al., "Distributional Reinforcement Learning with Quantile Regression" (2017): the
return of each action is represented by 200 quantiles at fixed fractions, trained by the
quantile Huber loss. The rest is DQN's Atari setting: epsilon 1 -> 0.05 over 1M env steps
(0.005 in tests), target network copied every 500 updates, batch 32, Adam with lr 1e-4,
3-step returns (1 in the paper), a 100k-transition buffer, one update per 10 env steps
collected by 10 envs.

    python -m examples.atari.atari_qrdqn --task PongNoFrameskip-v4 --seed 0
    python -m examples.atari.atari_qrdqn --watch \
        --resume-path log/PongNoFrameskip-v4/qrdqn/0/policy.pth
"""

import argparse
from collections.abc import Sequence

from tianshou.algorithm import QRDQN
from tianshou.algorithm.modelfree.qrdqn import QRDQNPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import CollectStats, InfoStats
from tianshou.env.atari.atari_network import QRDQNet
from tianshou.scripts.atari.cli import add_q_learning_arguments, atari_parser
from tianshou.scripts.atari.envs import AtariEnvs, scale_obs_if
from tianshou.scripts.atari.training import run_q_learning


def get_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = atari_parser(__doc__.split("\n")[0], off_policy=True)
    add_q_learning_arguments(parser)
    parser.add_argument("--num-quantiles", type=int, default=200)
    return parser.parse_args(argv)


def build_qrdqn(args: argparse.Namespace, envs: AtariEnvs) -> QRDQN:
    """QR-DQN with a quantile Nature-DQN network for ``envs``' frames and actions."""
    c, h, w = envs.frame_shape
    net = QRDQNet(c=c, h=h, w=w, action_shape=envs.num_actions, num_quantiles=args.num_quantiles)
    policy = QRDQNPolicy(
        model=scale_obs_if(args.scale_obs, net).to(args.device),
        action_space=envs.env.action_space,
        eps_training=args.eps_train,
        eps_inference=args.eps_test,
    )
    return QRDQN(
        policy=policy,
        optim=AdamOptimizerFactory(lr=args.lr),
        gamma=args.gamma,
        num_quantiles=args.num_quantiles,
        n_step_return_horizon=args.n_step_return_horizon,
        target_update_freq=args.target_update_freq,
    ).to(args.device)


def main(argv: Sequence[str] | None = None) -> InfoStats | CollectStats:
    return run_q_learning(get_args(argv), build_qrdqn, "qrdqn")


if __name__ == "__main__":
    main()
