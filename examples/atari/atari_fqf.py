"""FQF (fully parameterized quantile function) on an Atari game, with the published
hyper-parameters.

Yang et al., "Fully Parameterized Quantile Function for Distributional Reinforcement Learning"
(2019): a fraction proposal network places 32 quantile fractions per state (trained by the
fraction loss with RMSprop at lr 2.5e-9 and an entropy bonus of weight 10); IQN's quantile
network (64 cosines, a 512-unit head) evaluates the quantiles at their midpoints (Adam, lr
5e-5). The rest is DQN's Atari setting: epsilon 1 -> 0.05 over 1M env steps (0.005 in tests),
target network copied every 500 updates, batch 32, 3-step returns, a 100k-transition buffer,
one update per 10 env steps collected by 10 envs.

    python -m examples.atari.atari_fqf --task PongNoFrameskip-v4 --seed 0
    python -m examples.atari.atari_fqf --watch --resume-path log/PongNoFrameskip-v4/fqf/0/policy.pth
"""

import argparse
from collections.abc import Sequence

from tianshou.algorithm import FQF
from tianshou.algorithm.modelfree.fqf import FQFPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory, RMSpropOptimizerFactory
from tianshou.data import CollectStats, InfoStats
from tianshou.env.atari.atari_network import DQNet
from tianshou.scripts.atari.cli import add_q_learning_arguments, atari_parser
from tianshou.scripts.atari.envs import AtariEnvs, scale_obs_if
from tianshou.scripts.atari.training import run_q_learning
from tianshou.utils.net.discrete import FractionProposalNetwork, FullQuantileFunction


def get_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = atari_parser(__doc__.split("\n")[0], off_policy=True)
    add_q_learning_arguments(parser)
    parser.set_defaults(lr=5e-5)
    parser.add_argument("--fraction-lr", type=float, default=2.5e-9)
    parser.add_argument("--num-fractions", type=int, default=32)
    parser.add_argument("--num-cosines", type=int, default=64)
    parser.add_argument("--ent-coef", type=float, default=10.0, help="fraction entropy bonus")
    parser.add_argument("--hidden-sizes", type=int, nargs="*", default=[512])
    return parser.parse_args(argv)


def build_fqf(args: argparse.Namespace, envs: AtariEnvs) -> FQF:
    """FQF with a full quantile function on the Nature-DQN torso for ``envs``."""
    features = DQNet(*envs.frame_shape, action_shape=envs.num_actions, features_only=True)
    net = FullQuantileFunction(
        preprocess_net=scale_obs_if(args.scale_obs, features),
        action_shape=envs.num_actions,
        hidden_sizes=args.hidden_sizes,
        num_cosines=args.num_cosines,
    ).to(args.device)
    fraction_net = FractionProposalNetwork(args.num_fractions, net.input_dim).to(args.device)
    policy = FQFPolicy(
        model=net,
        fraction_model=fraction_net,
        action_space=envs.env.action_space,
        eps_training=args.eps_train,
        eps_inference=args.eps_test,
    )
    return FQF(
        policy=policy,
        optim=AdamOptimizerFactory(lr=args.lr),
        fraction_optim=RMSpropOptimizerFactory(lr=args.fraction_lr),
        gamma=args.gamma,
        num_fractions=args.num_fractions,
        ent_coef=args.ent_coef,
        n_step_return_horizon=args.n_step_return_horizon,
        target_update_freq=args.target_update_freq,
    ).to(args.device)


def main(argv: Sequence[str] | None = None) -> InfoStats | CollectStats:
    return run_q_learning(get_args(argv), build_fqf, "fqf")


if __name__ == "__main__":
    main()
