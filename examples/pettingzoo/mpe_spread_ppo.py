"""Simple spread (MPE, PettingZoo Parallel API): three agents that move at the same time learn
to cover three landmarks without colliding, with PPO.

Every step all agents act; :class:`~tianshou.env.PettingZooParallelEnv` stacks their
observations, actions and rewards row by row. ``--shared`` trains one PPO whose actor and critic
serve all three agents (parameter sharing: three times the samples per update); without it each
agent has its own PPO (independent learners). The reported return is the mean over agents of
each agent's episode return; a uniformly random team gets about -25.8. The trained team is saved
to ``<persistence-base-dir>/simple_spread/<ppo_shared|ppo_independent>/<seed>/policy.pth``;
``--watch --resume-path`` evaluates a saved team without training::

    python -m examples.pettingzoo.mpe_spread_ppo --shared --epoch 10
    python examples/pettingzoo/mpe_spread_ppo.py --shared --watch \
        --resume-path log/simple_spread/ppo_shared/0/policy.pth
"""

import argparse
import os
from collections.abc import Sequence

import numpy as np
import torch
from mpe2 import simple_spread_v3
from torch.utils.tensorboard import SummaryWriter

from tianshou.algorithm import PPO, Algorithm
from tianshou.algorithm.modelfree.reinforce import DiscreteActorPolicy
from tianshou.algorithm.multiagent.parallel import ParallelMultiAgentOnPolicyAlgorithm
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import Collector, CollectStats, InfoStats, VectorReplayBuffer
from tianshou.env import DummyVectorEnv, PettingZooParallelEnv
from tianshou.scripts.summary import final_test_return, report_training
from tianshou.trainer import OnPolicyTrainerParams
from tianshou.utils.cli import (
    ArgumentParser,
    add_torch_threads_option,
    parse_known_options,
    torch_threads_from_args,
)
from tianshou.utils.logger.tensorboard import TensorboardLogger
from tianshou.utils.net.common import Net
from tianshou.utils.net.discrete import DiscreteActor, DiscreteCritic


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
    add("--epoch-num-steps", type=int, default=10000)
    add("--collection-step-num-env-steps", type=int, default=800)
    add("--update-step-num-repetitions", type=int, default=5)
    add("--batch-size", type=int, default=256)
    add("--num-training-envs", type=int, default=8)
    add("--num-test-envs", type=int, default=20)
    add("--stop-return", type=float, default=None, help="stop once the test return reaches it")
    add("--persistence-base-dir", type=str, default="log")
    add("--device", type=str, default="cpu")
    add("--resume-path", type=str, default="", help="a saved team (policy.pth) to start from")
    add("--watch", action="store_true", help="only evaluate the loaded team, no training")
    add_torch_threads_option(parser)
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


def mean_over_agents(returns: np.ndarray) -> np.ndarray:
    """An episode's return: the mean over agents of each agent's return."""
    return returns.mean(axis=1)


def algo_name(args: argparse.Namespace) -> str:
    """``ppo_shared`` (with ``--shared``) or ``ppo_independent``."""
    return "ppo_shared" if args.shared else "ppo_independent"


def log_dir(args: argparse.Namespace) -> str:
    """``<persistence-base-dir>/simple_spread/<algo_name>/<seed>``."""
    return os.path.join(args.persistence_base_dir, "simple_spread", algo_name(args), str(args.seed))


def train(args: argparse.Namespace) -> InfoStats | CollectStats:
    """Train the team (from ``--resume-path``, if given) and report the run; with ``--watch``
    only evaluate the loaded team on ``--num-test-envs`` episodes."""
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    algorithm = build_algorithm(args, get_env(args))
    if args.resume_path:
        algorithm.load_state_dict(torch.load(args.resume_path, map_location=args.device))
        print(f"loaded {args.resume_path}")
    test_envs = DummyVectorEnv([lambda: get_env(args) for _ in range(min(args.num_test_envs, 10))])
    test_envs.seed(args.seed + args.num_training_envs)
    test_collector = Collector[CollectStats](algorithm, test_envs)
    if args.watch:
        stats = test_collector.collect(n_episode=args.num_test_envs, reset_before_collect=True)
        mean = float(np.mean(mean_over_agents(stats.returns)))
        print(f"mean return (mean over agents) {mean:.2f} over {len(stats.returns)} episodes")
        return stats
    train_envs = DummyVectorEnv([lambda: get_env(args) for _ in range(args.num_training_envs)])
    train_envs.seed(args.seed)
    log_path = log_dir(args)
    policy_path = os.path.join(log_path, "policy.pth")

    def save_best_fn(best: Algorithm) -> None:
        os.makedirs(log_path, exist_ok=True)
        torch.save(best.state_dict(), policy_path)

    stop_return = args.stop_return
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
            multi_agent_return_reduction=mean_over_agents,
            stop_fn=None if stop_return is None else (lambda mean: mean >= stop_return),
            save_best_fn=save_best_fn,
            logger=TensorboardLogger(SummaryWriter(log_path)),
            show_progress=False,
        )
    )
    report_training(
        task="simple_spread",
        algorithm=algo_name(args),
        info=result,
        final_test_return=final_test_return(test_collector, args.num_test_envs, mean_over_agents),
        log_dir=log_path,
        config=vars(args),
        policy_path=policy_path,
    )
    return result


def main(argv: Sequence[str] | None = None) -> InfoStats | CollectStats:
    """Parse ``argv`` and :func:`train` with torch's thread count of ``--torch-threads``."""
    args = get_args(argv)
    with torch_threads_from_args(args):
        return train(args)


if __name__ == "__main__":
    main()
