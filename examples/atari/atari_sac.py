"""Discrete Soft Actor-Critic on an Atari game, with the published hyper-parameters.

Christodoulou, "Soft Actor-Critic for Discrete Action Settings" (2019): a categorical actor
and twin soft Q-critics (one Q-value per action) on one shared Nature-DQN torso with a
512-unit layer; expectations over actions are exact sums. Adam with lr 1e-5 for actor and
critics (3e-4 in the paper), entropy coefficient 0.05, or tuned towards 0.98 x log(#actions)
with ``--auto-alpha`` (as in the paper); tau 0.005, 3-step returns, batch 64, a 100k-transition
buffer, one update per 10 env steps collected by 10 envs.

    python -m examples.atari.atari_sac --task PongNoFrameskip-v4 --seed 4213
    python -m examples.atari.atari_sac --watch \
        --resume-path log/PongNoFrameskip-v4/sac/4213/policy.pth
"""

import argparse
from collections.abc import Sequence

import numpy as np

from tianshou.algorithm import DiscreteSAC
from tianshou.algorithm.modelfree.discrete_sac import DiscreteSACPolicy
from tianshou.algorithm.modelfree.sac import AutoAlpha
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import CollectStats, InfoStats
from tianshou.env.atari.atari_network import DQNet
from tianshou.scripts.atari.cli import atari_parser
from tianshou.scripts.atari.envs import AtariEnvs, atari_envs, scale_obs_if
from tianshou.scripts.atari.training import create_logger, load_resume_path, train_off_policy, watch
from tianshou.utils.cli import torch_threads_from_args
from tianshou.utils.net.discrete import DiscreteActor, DiscreteCritic


def get_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = atari_parser(__doc__.split("\n")[0], off_policy=True)
    parser.set_defaults(seed=4213, lr=1e-5, batch_size=64)
    parser.add_argument("--actor-lr", type=float, default=None, help="default: --lr")
    parser.add_argument("--critic-lr", type=float, default=None, help="default: --lr")
    parser.add_argument("--n-step-return-horizon", type=int, default=3)
    parser.add_argument("--tau", type=float, default=0.005)
    parser.add_argument("--alpha", type=float, default=0.05, help="fixed entropy coefficient")
    parser.add_argument(
        "--auto-alpha", action="store_true", help="tune the entropy coefficient instead"
    )
    parser.add_argument("--alpha-lr", type=float, default=3e-4)
    parser.add_argument("--hidden-size", type=int, default=512)
    return parser.parse_args(argv)


def build_sac(args: argparse.Namespace, envs: AtariEnvs) -> DiscreteSAC:
    """Discrete SAC whose actor and critics share a Nature-DQN torso, for ``envs``."""
    torso = DQNet(
        *envs.frame_shape,
        action_shape=envs.num_actions,
        features_only=True,
        output_dim_added_layer=args.hidden_size,
    )
    body = scale_obs_if(args.scale_obs, torso).to(args.device)
    actor = DiscreteActor(
        preprocess_net=body, action_shape=envs.num_actions, softmax_output=False
    ).to(args.device)
    critic1 = DiscreteCritic(preprocess_net=body, last_size=envs.num_actions).to(args.device)
    critic2 = DiscreteCritic(preprocess_net=body, last_size=envs.num_actions).to(args.device)
    alpha: float | AutoAlpha = args.alpha
    if args.auto_alpha:
        alpha = AutoAlpha(
            target_entropy=0.98 * float(np.log(envs.num_actions)),
            log_alpha=0.0,
            optim=AdamOptimizerFactory(lr=args.alpha_lr),
        )
    critic_optim = AdamOptimizerFactory(lr=args.critic_lr or args.lr)
    return DiscreteSAC(
        policy=DiscreteSACPolicy(actor=actor, action_space=envs.env.action_space),
        policy_optim=AdamOptimizerFactory(lr=args.actor_lr or args.lr),
        critic=critic1,
        critic_optim=critic_optim,
        critic2=critic2,
        critic2_optim=critic_optim,
        tau=args.tau,
        gamma=args.gamma,
        alpha=alpha,
        n_step_return_horizon=args.n_step_return_horizon,
    ).to(args.device)


def main(argv: Sequence[str] | None = None) -> InfoStats | CollectStats:
    args = get_args(argv)
    with torch_threads_from_args(args), atari_envs(args) as envs:
        algorithm = build_sac(args, envs)
        load_resume_path(algorithm, args)
        if args.watch:
            return watch(algorithm, envs, args)
        logger, log_path = create_logger(args, "sac")
        return train_off_policy(algorithm, envs, args, logger, log_path, algo_name="sac")


if __name__ == "__main__":
    main()
