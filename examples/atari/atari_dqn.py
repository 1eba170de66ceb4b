"""Deep Q-Network on an Atari game, with the published hyper-parameters.

Mnih et al., "Human-level control through deep reinforcement learning" (2015): the Nature-DQN
network on 4 stacked 84x84 grayscale frames, epsilon decaying from 1 to 0.05 over the first
1M env steps (0.005 in tests), a target network copied every 500 updates, batch 32, Adam with
lr 1e-4 (RMSprop 2.5e-4 in the paper), 3-step returns (1 in the paper), a 100k-transition
buffer (1M in the paper), one update per 10 env steps collected by 10 envs.

With ``--icm-lr-scale`` > 0 the algorithm is wrapped in an intrinsic curiosity module (Pathak
et al. 2017) and runs are logged under ``dqn_icm``.

    python -m examples.atari.atari_dqn --task PongNoFrameskip-v4 --seed 0
    python -m examples.atari.atari_dqn --task PongNoFrameskip-v4 --icm-lr-scale 1
    python -m examples.atari.atari_dqn --watch --resume-path log/PongNoFrameskip-v4/dqn/0/policy.pth
"""

import argparse
from collections.abc import Sequence

from tianshou.algorithm import DQN, Algorithm
from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import CollectStats, InfoStats
from tianshou.env.atari.atari_network import DQNet
from tianshou.scripts.atari.cli import add_icm_arguments, add_q_learning_arguments, atari_parser
from tianshou.scripts.atari.envs import AtariEnvs, scale_obs_if
from tianshou.scripts.atari.icm import algo_name_with_icm, with_icm
from tianshou.scripts.atari.training import run_q_learning


def get_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = atari_parser(__doc__.split("\n")[0], off_policy=True)
    add_q_learning_arguments(parser)
    add_icm_arguments(parser)
    return parser.parse_args(argv)


def build_dqn(args: argparse.Namespace, envs: AtariEnvs) -> Algorithm:
    """DQN with a Nature-DQN Q-network for ``envs``' frames and actions, wrapped in an
    intrinsic curiosity module (conv features, 512 hidden units) with ``--icm-lr-scale`` > 0."""
    net = scale_obs_if(args.scale_obs, DQNet(*envs.frame_shape, action_shape=envs.num_actions))
    policy = DiscreteQLearningPolicy(
        model=net.to(args.device),
        action_space=envs.env.action_space,
        eps_training=args.eps_train,
        eps_inference=args.eps_test,
    )
    dqn = DQN(
        policy=policy,
        optim=AdamOptimizerFactory(lr=args.lr),
        gamma=args.gamma,
        n_step_return_horizon=args.n_step_return_horizon,
        target_update_freq=args.target_update_freq,
    ).to(args.device)
    return with_icm(dqn, args, envs)


def main(argv: Sequence[str] | None = None) -> InfoStats | CollectStats:
    args = get_args(argv)
    return run_q_learning(args, build_dqn, algo_name_with_icm(args, "dqn"))


if __name__ == "__main__":
    main()
