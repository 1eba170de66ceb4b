"""Simple spread (MPE, PettingZoo Parallel API): three agents that move at the same time learn
to cover three landmarks without colliding, with PPO.

Every step all agents act; :class:`~tianshou.env.PettingZooParallelEnv` stacks their
observations, actions and rewards row by row. ``--shared`` trains one PPO whose actor and critic
serve all three agents (parameter sharing: three times the samples per update); without it each
agent has its own PPO (independent learners). The reported return is the mean over agents of
each agent's episode return; a uniformly random team gets about -25.8::

    python -m examples.pettingzoo.mpe_spread_ppo --shared --epoch 10
"""

import argparse
import os
from collections.abc import Sequence

import numpy as np
import torch
from mpe2 import simple_spread_v3
from torch.utils.tensorboard import SummaryWriter

from tianshou.algorithm import PPO
from tianshou.algorithm.modelfree.reinforce import DiscreteActorPolicy
from tianshou.algorithm.multiagent.parallel import ParallelMultiAgentOnPolicyAlgorithm
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import Collector, CollectStats, InfoStats, VectorReplayBuffer
from tianshou.env import DummyVectorEnv, PettingZooParallelEnv
from tianshou.trainer import OnPolicyTrainerParams
from tianshou.utils.logger.tensorboard import TensorboardLogger
from tianshou.utils.net.common import Net
from tianshou.utils.net.discrete import DiscreteActor, DiscreteCritic

from examples.script_cli import ArgumentParser, parse_known_options


def get_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = ArgumentParser(description=__doc__.splitlines()[0])
    add = parser.add_argument
    add("--shared", action="store_true", help="one PPO for all agents (parameter sharing)")
    add("--num-agents", type=int, default=3)
    add("--max-cycles", type=int, default=25, help="steps per episode")
    add("--seed", type=int, default=0)
    add("--lr", type=float, default=3e-4)
    add("--gamma", type=float, default=0.95)
    add("--gae-lambda", type=float, default=0.95)
    add("--ent-coef", type=float, default=0.01)
    add("--hidden-sizes", type=int, nargs="*", default=[64, 64])
    add("--epoch", type=int, default=10)
    add("--step-per-epoch", "--epoch-num-steps", dest="step_per_epoch", type=int, default=10000)
    add("--step-per-collect", type=int, default=800)
    add("--repeat-per-collect", type=int, default=5)
    add("--batch-size", type=int, default=256)
    add("--training-num", type=int, default=8)
    add("--test-num", type=int, default=20)
    add("--stop-return", type=float, default=None, help="stop once the test return reaches it")
    add("--logdir", type=str, default="log")
    add("--device", type=str, default="cpu")
    return parse_known_options(parser, argv)


def get_env(args: argparse.Namespace) -> PettingZooParallelEnv:
    return PettingZooParallelEnv(
        simple_spread_v3.parallel_env(
            N=args.num_agents, max_cycles=args.max_cycles, continuous_actions=False
        )
    )


def make_ppo(args: argparse.Namespace, env: PettingZooParallelEnv) -> PPO:
    """One agent's (or, shared, every agent's) PPO on an agent's own observation."""
    obs_dim = env.agent_observation_space.shape[0]
    n_actions = int(env.agent_action_space.n)
    actor = DiscreteActor(
        preprocess_net=Net(state_shape=obs_dim, hidden_sizes=args.hidden_sizes),
        action_shape=n_actions,
    ).to(args.device)
    critic = DiscreteCritic(
        preprocess_net=Net(state_shape=obs_dim, hidden_sizes=args.hidden_sizes)
    ).to(args.device)
    policy = DiscreteActorPolicy(
        actor=actor, dist_fn=torch.distributions.Categorical, action_space=env.agent_action_space
    )
    return PPO(
        policy=policy,
        critic=critic,
        optim=AdamOptimizerFactory(lr=args.lr),
        gamma=args.gamma,
        gae_lambda=args.gae_lambda,
        ent_coef=args.ent_coef,
    )


def build_algorithm(
    args: argparse.Namespace, env: PettingZooParallelEnv
) -> ParallelMultiAgentOnPolicyAlgorithm:
    if args.shared:
        shared = make_ppo(args, env)
        algorithms = [shared] * env.num_agents
    else:
        algorithms = [make_ppo(args, env) for _ in range(env.num_agents)]
    return ParallelMultiAgentOnPolicyAlgorithm(algorithms=algorithms, env=env)


def train(args: argparse.Namespace) -> InfoStats:
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    algorithm = build_algorithm(args, get_env(args))
    train_envs = DummyVectorEnv([lambda: get_env(args) for _ in range(args.training_num)])
    test_envs = DummyVectorEnv([lambda: get_env(args) for _ in range(min(args.test_num, 10))])
    train_envs.seed(args.seed)
    test_envs.seed(args.seed + args.training_num)
    name = "ppo_shared" if args.shared else "ppo_independent"
    log_path = os.path.join(args.logdir, "simple_spread", name, str(args.seed))
    stop_return = args.stop_return
    return algorithm.run_training(
        OnPolicyTrainerParams(
            training_collector=Collector[CollectStats](
                algorithm, train_envs, VectorReplayBuffer(args.step_per_collect, len(train_envs))
            ),
            test_collector=Collector[CollectStats](algorithm, test_envs),
            max_epochs=args.epoch,
            epoch_num_steps=args.step_per_epoch,
            collection_step_num_env_steps=args.step_per_collect,
            update_step_num_repetitions=args.repeat_per_collect,
            batch_size=args.batch_size,
            test_step_num_episodes=args.test_num,
            multi_agent_return_reduction=lambda returns: returns.mean(axis=1),
            stop_fn=None if stop_return is None else (lambda mean: mean >= stop_return),
            logger=TensorboardLogger(SummaryWriter(log_path)),
            show_progress=False,
        )
    )


if __name__ == "__main__":
    result = train(get_args())
    print(f"best test return (mean over agents): {result.best_reward:.2f}")
