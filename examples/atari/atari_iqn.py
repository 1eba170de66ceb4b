"""IQN (implicit quantile networks) on an Atari game, with the published hyper-parameters.

Dabney et al., "Implicit Quantile Networks for Distributional Reinforcement Learning" (2018):
quantiles at randomly sampled fractions, each fraction embedded with 64 cosines and multiplied
into the Nature-DQN features before a 512-unit head; 32 fractions to act, 8 for the online and
8 for the target quantiles of the loss (the paper: 32, 64 and 64). The rest is DQN's Atari
setting: epsilon 1 -> 0.05 over 1M env steps (0.005 in tests), target network copied every
500 updates, batch 32, Adam with lr 1e-4, 3-step returns, a 100k-transition buffer, one update
per 10 env steps collected by 10 envs.

    python -m examples.atari.atari_iqn --task PongNoFrameskip-v4 --seed 0
    python -m examples.atari.atari_iqn --watch --resume-path log/PongNoFrameskip-v4/iqn/0/policy.pth
"""

import argparse
from collections.abc import Sequence

from tianshou.algorithm import IQN
from tianshou.algorithm.modelfree.iqn import IQNPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import CollectStats, InfoStats
from tianshou.env.atari.atari_network import DQNet
from tianshou.scripts.atari.cli import add_q_learning_arguments, atari_parser
from tianshou.scripts.atari.envs import AtariEnvs, scale_obs_if
from tianshou.scripts.atari.training import run_q_learning
from tianshou.utils.net.discrete import ImplicitQuantileNetwork


def get_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = atari_parser(__doc__.split("\n")[0], off_policy=True)
    add_q_learning_arguments(parser)
    parser.add_argument("--sample-size", type=int, default=32, help="fractions to act on")
    parser.add_argument("--online-sample-size", type=int, default=8)
    parser.add_argument("--target-sample-size", type=int, default=8)
    parser.add_argument("--num-cosines", type=int, default=64)
    parser.add_argument("--hidden-sizes", type=int, nargs="*", default=[512])
    return parser.parse_args(argv)


def build_iqn(args: argparse.Namespace, envs: AtariEnvs) -> IQN:
    """IQN with an implicit quantile network on the Nature-DQN torso for ``envs``."""
    features = DQNet(*envs.frame_shape, action_shape=envs.num_actions, features_only=True)
    net = ImplicitQuantileNetwork(
        preprocess_net=scale_obs_if(args.scale_obs, features),
        action_shape=envs.num_actions,
        hidden_sizes=args.hidden_sizes,
        num_cosines=args.num_cosines,
    )
    policy = IQNPolicy(
        model=net.to(args.device),
        action_space=envs.env.action_space,
        sample_size=args.sample_size,
        online_sample_size=args.online_sample_size,
        target_sample_size=args.target_sample_size,
        eps_training=args.eps_train,
        eps_inference=args.eps_test,
    )
    return IQN(
        policy=policy,
        optim=AdamOptimizerFactory(lr=args.lr),
        gamma=args.gamma,
        n_step_return_horizon=args.n_step_return_horizon,
        target_update_freq=args.target_update_freq,
    ).to(args.device)


def main(argv: Sequence[str] | None = None) -> InfoStats | CollectStats:
    return run_q_learning(get_args(argv), build_iqn, "iqn")


if __name__ == "__main__":
    main()
