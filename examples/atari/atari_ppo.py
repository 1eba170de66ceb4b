"""Proximal Policy Optimisation on an Atari game, with the published hyper-parameters.

Schulman et al., "Proximal Policy Optimization Algorithms" (2017), Atari setting: actor and
critic share a Nature-DQN torso with a 512-unit layer (orthogonal initialisation) that divides
the uint8 pixels by 255 itself (``--scale-obs 1``); Adam with lr 2.5e-4 decaying linearly to
0, clip 0.1, entropy bonus 0.01, GAE(0.95), gradient norm clipped at 0.5, advantages
normalised, value clipping. Each update makes 4 passes in minibatches of 256 over 1,000 env
steps from 10 envs, with value coefficient 0.25 (the paper: 8 envs x 128 steps, 3 passes,
minibatches of 256 (32 x 8), value coefficient 1).

With ``--icm-lr-scale`` > 0 the algorithm is wrapped in an intrinsic curiosity module (Pathak
et al. 2017) and runs are logged under ``ppo_icm``.

    python -m examples.atari.atari_ppo --task PongNoFrameskip-v4 --seed 4213
    python -m examples.atari.atari_ppo --task MontezumaRevengeNoFrameskip-v4 --icm-lr-scale 1
    python -m examples.atari.atari_ppo --watch \
        --resume-path log/PongNoFrameskip-v4/ppo/4213/policy.pth
"""

import argparse
from collections.abc import Sequence

from tianshou.algorithm import PPO, Algorithm
from tianshou.algorithm.modelfree.reinforce import DiscreteActorPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory, LRSchedulerFactoryLinear
from tianshou.data import Collector, CollectStats, InfoStats
from tianshou.env.atari.atari_network import DQNet, layer_init
from tianshou.scripts.atari.buffers import replay_buffer
from tianshou.scripts.atari.cli import add_icm_arguments, atari_parser
from tianshou.scripts.atari.envs import AtariEnvs, atari_envs, scale_obs_if
from tianshou.scripts.atari.icm import algo_name_with_icm, with_icm
from tianshou.scripts.atari.training import (
    create_logger,
    load_resume_path,
    report_run,
    save_best_fn,
    stop_fn,
    watch,
)
from tianshou.trainer import OnPolicyTrainerParams
from tianshou.utils.cli import torch_threads_from_args
from tianshou.utils.logger.logger_base import BaseLogger
from tianshou.utils.net.discrete import (
    DiscreteActor,
    DiscreteCritic,
    dist_fn_categorical_from_logits,
)


def get_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = atari_parser(__doc__.split("\n")[0], off_policy=False)
    parser.set_defaults(
        seed=4213, scale_obs=1, lr=2.5e-4, collection_step_num_env_steps=1000, batch_size=256
    )
    parser.add_argument("--update-step-num-repetitions", type=int, default=4)
    parser.add_argument("--hidden-size", type=int, default=512)
    parser.add_argument("--return-scaling", type=int, default=0)
    parser.add_argument("--vf-coef", type=float, default=0.25)
    parser.add_argument("--ent-coef", type=float, default=0.01)
    parser.add_argument("--gae-lambda", type=float, default=0.95)
    parser.add_argument("--lr-decay", type=int, default=1)
    parser.add_argument("--max-grad-norm", type=float, default=0.5)
    parser.add_argument("--eps-clip", type=float, default=0.1)
    parser.add_argument("--dual-clip", type=float, default=None)
    parser.add_argument("--value-clip", type=int, default=1)
    parser.add_argument("--advantage-normalization", type=int, default=1)
    parser.add_argument("--recompute-advantage", type=int, default=0)
    add_icm_arguments(parser)
    return parser.parse_args(argv)


def build_ppo(args: argparse.Namespace, envs: AtariEnvs) -> Algorithm:
    """PPO whose actor and critic share an orthogonally initialised Nature-DQN torso, wrapped in
    an intrinsic curiosity module with ``--icm-lr-scale`` > 0 (its frame embedding and hidden
    layers ``--hidden-size`` wide, as published)."""
    torso = DQNet(
        *envs.frame_shape,
        action_shape=envs.num_actions,
        features_only=True,
        output_dim_added_layer=args.hidden_size,
        layer_init=layer_init,
    )
    body = scale_obs_if(args.scale_obs, torso)
    actor = DiscreteActor(preprocess_net=body, action_shape=envs.num_actions, softmax_output=False)
    critic = DiscreteCritic(preprocess_net=body)
    optim = AdamOptimizerFactory(lr=args.lr, eps=1e-5)
    if args.lr_decay:
        optim = optim.with_lr_scheduler_factory(
            LRSchedulerFactoryLinear(
                max_epochs=args.epoch,
                epoch_num_steps=args.epoch_num_steps,
                collection_step_num_env_steps=args.collection_step_num_env_steps,
            )
        )
    policy = DiscreteActorPolicy(
        actor=actor.to(args.device),
        dist_fn=dist_fn_categorical_from_logits,
        action_space=envs.env.action_space,
    )
    ppo = PPO(
        policy=policy,
        critic=critic.to(args.device),
        optim=optim,
        gamma=args.gamma,
        gae_lambda=args.gae_lambda,
        max_grad_norm=args.max_grad_norm,
        vf_coef=args.vf_coef,
        ent_coef=args.ent_coef,
        return_scaling=bool(args.return_scaling),
        eps_clip=args.eps_clip,
        value_clip=bool(args.value_clip),
        dual_clip=args.dual_clip,
        advantage_normalization=bool(args.advantage_normalization),
        recompute_advantage=bool(args.recompute_advantage),
    ).to(args.device)
    return with_icm(ppo, args, envs, feature_layer=args.hidden_size, hidden_size=args.hidden_size)


def train(
    algorithm: Algorithm,
    envs: AtariEnvs,
    args: argparse.Namespace,
    logger: BaseLogger,
    log_path: str,
    algo_name: str,
) -> InfoStats:
    """Train with the on-policy trainer (the buffer holds one collection of uint8 frames), then
    report the run as ``algo_name``."""
    buffer = replay_buffer(args, len(envs.train_envs))
    train_collector = Collector[CollectStats](
        algorithm, envs.train_envs, buffer, exploration_noise=True
    )
    test_collector = Collector[CollectStats](algorithm, envs.test_envs, exploration_noise=True)
    result = algorithm.run_training(
        OnPolicyTrainerParams(
            training_collector=train_collector,
            test_collector=test_collector,
            max_epochs=args.epoch,
            epoch_num_steps=args.epoch_num_steps,
            collection_step_num_env_steps=args.collection_step_num_env_steps,
            update_step_num_repetitions=args.update_step_num_repetitions,
            test_step_num_episodes=args.num_test_envs,
            batch_size=args.batch_size,
            stop_fn=stop_fn(envs.env, args.task),
            save_best_fn=save_best_fn(log_path),
            logger=logger,
            resume_from_log=args.resume_id is not None,
            test_in_training=False,
            show_progress=not args.no_progress,
        )
    )
    report_run(result, test_collector, args, algo_name, log_path)
    return result


def main(argv: Sequence[str] | None = None) -> InfoStats | CollectStats:
    args = get_args(argv)
    with torch_threads_from_args(args), atari_envs(args) as envs:
        algorithm = build_ppo(args, envs)
        load_resume_path(algorithm, args)
        if args.watch:
            return watch(algorithm, envs, args)
        algo_name = algo_name_with_icm(args, "ppo")
        logger, log_path = create_logger(args, algo_name)
        return train(algorithm, envs, args, logger, log_path, algo_name)


if __name__ == "__main__":
    main()
