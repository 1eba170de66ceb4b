"""Legal-action masks end to end: DQN and PPO learn tic-tac-toe against a random opponent.

A move onto an occupied square is against the rules: the environment raises, so a policy that
ignores the mask fails at its first illegal move. Each observation is the masked dict of
``docs/spaces.md``, ``{"obs": the board, "mask": the empty squares}``; the networks read the
board, and the policies act, explore and bootstrap among the legal moves only. A win pays 1, a
loss -1 and a draw 0, so a random legal player (moving first) averages about 0.3.

    python examples/discrete/masked_tic_tac_toe.py
    python examples/discrete/masked_tic_tac_toe.py --algorithm ppo --seed 1
    python examples/discrete/masked_tic_tac_toe.py --algorithm dqn --watch \
        --resume-path log/masked_tic_tac_toe/dqn/0/policy.pth
"""

import argparse
import os
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from tianshou.algorithm import DQN, PPO, Algorithm
from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
from tianshou.algorithm.modelfree.reinforce import DiscreteActorPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import Collector, CollectStats, VectorReplayBuffer
from tianshou.env import DummyVectorEnv
from tianshou.scripts.summary import final_test_return, report_training
from tianshou.trainer import OffPolicyTrainerParams, OnPolicyTrainerParams
from tianshou.utils.cli import ArgumentParser, add_torch_threads_option, torch_threads_from_args
from tianshou.utils.net.common import Net
from tianshou.utils.net.discrete import DiscreteActor, DiscreteCritic
from tianshou.utils.space_info import SpaceInfo

LINES = np.array(
    [[0, 1, 2], [3, 4, 5], [6, 7, 8], [0, 3, 6], [1, 4, 7], [2, 5, 8], [0, 4, 8], [2, 4, 6]]
)
"""The eight lines of three squares that win."""


class TicTacToeVsRandom(gym.Env):
    """Tic-tac-toe as the first player (+1) against an opponent (-1) who plays a uniformly
    random empty square. The board is seen from the learner's side: +1 own, -1 opponent's,
    0 empty."""

    def __init__(self) -> None:
        self.observation_space = gym.spaces.Dict(
            {"obs": gym.spaces.Box(-1.0, 1.0, (9,), np.float32), "mask": gym.spaces.MultiBinary(9)}
        )
        self.action_space = gym.spaces.Discrete(9)
        self._board = np.zeros(9, dtype=np.float32)

    def _observe(self) -> dict[str, np.ndarray]:
        return {"obs": self._board.copy(), "mask": (self._board == 0).astype(np.int8)}

    def _wins(self, player: float) -> bool:
        return bool((self._board[LINES] == player).all(axis=1).any())

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        super().reset(seed=seed)
        self._board[:] = 0
        return self._observe(), {}

    def step(self, action: int) -> tuple[dict[str, np.ndarray], float, bool, bool, dict]:
        square = int(action)
        if self._board[square] != 0:
            raise ValueError(
                f"illegal move: square {square} is taken; legal: {np.flatnonzero(self._board == 0)}"
            )
        self._board[square] = 1
        if self._wins(1):
            return self._observe(), 1.0, True, False, {}
        empty = np.flatnonzero(self._board == 0)
        if empty.size == 0:
            return self._observe(), 0.0, True, False, {}
        self._board[self.np_random.choice(empty)] = -1
        if self._wins(-1):
            return self._observe(), -1.0, True, False, {}
        return self._observe(), 0.0, bool((self._board != 0).all()), False, {}


def make_envs(num: int, seed: int) -> DummyVectorEnv:
    envs = DummyVectorEnv([TicTacToeVsRandom for _ in range(num)])
    envs.seed(seed)
    return envs


def build_dqn(args: argparse.Namespace) -> DQN:
    info = SpaceInfo.from_env(TicTacToeVsRandom())  # the masked dict: the board's shape
    net = Net(
        state_shape=info.observation_info.obs_shape,
        action_shape=info.action_info.action_shape,
        hidden_sizes=args.hidden_sizes,
    )
    policy = DiscreteQLearningPolicy(
        model=net, action_space=gym.spaces.Discrete(9), eps_training=0.2
    )
    return DQN(
        policy=policy,
        optim=AdamOptimizerFactory(lr=args.lr),
        gamma=args.gamma,
        n_step_return_horizon=1,
        target_update_freq=200,
    )


def build_ppo(args: argparse.Namespace) -> PPO:
    info = SpaceInfo.from_env(TicTacToeVsRandom())
    shape, actions = info.observation_info.obs_shape, info.action_info.action_shape
    actor = DiscreteActor(
        preprocess_net=Net(state_shape=shape, hidden_sizes=args.hidden_sizes),
        action_shape=actions,
        softmax_output=False,  # logits, which the policy's default distribution reads
    )
    critic = DiscreteCritic(preprocess_net=Net(state_shape=shape, hidden_sizes=args.hidden_sizes))
    policy = DiscreteActorPolicy(
        actor=actor, action_space=gym.spaces.Discrete(9), deterministic_eval=True
    )
    return PPO(
        policy=policy,
        critic=critic,
        optim=AdamOptimizerFactory(lr=args.lr),
        gamma=args.gamma,
        ent_coef=0.01,
    )


TASK = "masked_tic_tac_toe"
FINAL_TEST_GAMES = 200


def train(name: str, args: argparse.Namespace) -> float:
    """Train ``name`` ("dqn" or "ppo"), save its best policy, print the run's summary and
    return the final policy's mean return over :data:`FINAL_TEST_GAMES` new games."""
    torch.manual_seed(args.seed)
    algorithm: Algorithm = build_dqn(args) if name == "dqn" else build_ppo(args)
    if args.resume_path is not None:
        algorithm.load_state_dict(torch.load(args.resume_path, weights_only=True))
        print(f"loaded {args.resume_path}")
    test = Collector[CollectStats](algorithm, make_envs(10, args.seed + 100))
    if args.watch:
        score = final_test_return(test, FINAL_TEST_GAMES)
        print(
            f"{name.upper()} from {args.resume_path}: mean return {score:.3f} over "
            f"{FINAL_TEST_GAMES} games"
        )
        return score
    log_dir = os.path.join(args.persistence_base_dir, TASK, name, str(args.seed))
    policy_path = os.path.join(log_dir, "policy.pth")
    training = Collector[CollectStats](
        algorithm, make_envs(8, args.seed), VectorReplayBuffer(20_000, 8), exploration_noise=True
    )

    def save_best(algorithm: Algorithm) -> None:
        os.makedirs(log_dir, exist_ok=True)
        torch.save(algorithm.state_dict(), policy_path)

    common: dict[str, Any] = {
        "training_collector": training,
        "test_collector": test,
        "max_epochs": args.epoch,
        "epoch_num_steps": args.epoch_num_steps,
        "test_step_num_episodes": 100,
        "save_best_fn": save_best,
        "show_progress": not args.no_progress,
    }
    if name == "dqn":
        params: OffPolicyTrainerParams | OnPolicyTrainerParams = OffPolicyTrainerParams(
            **common,
            collection_step_num_env_steps=16,
            update_step_num_gradient_steps_per_sample=0.25,
            batch_size=64,
        )
    else:
        params = OnPolicyTrainerParams(
            **common,
            collection_step_num_env_steps=1024,
            update_step_num_repetitions=4,
            batch_size=128,
        )
    info = algorithm.run_training(params)
    score = final_test_return(test, FINAL_TEST_GAMES)
    report_training(
        task=TASK,
        algorithm=name,
        info=info,
        final_test_return=score,
        log_dir=log_dir,
        config=vars(args),
        policy_path=policy_path,
    )
    return score


def get_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--algorithm", choices=["dqn", "ppo", "both"], default="both")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--epoch", type=int, default=5, help="number of epochs")
    parser.add_argument("--epoch-num-steps", type=int, default=8192, help="env steps/epoch")
    parser.add_argument("--hidden-sizes", type=int, nargs="*", default=[128, 128])
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--gamma", type=float, default=0.95)
    parser.add_argument("--persistence-base-dir", default="log", help="where the runs write")
    parser.add_argument("--resume-path", default=None, help="a saved policy.pth to load")
    parser.add_argument(
        "--watch", action="store_true", help="only test the loaded policy (--resume-path)"
    )
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    add_torch_threads_option(parser)
    args = parser.parse_args(argv)
    if args.algorithm == "both" and (args.resume_path or args.watch):
        parser.error("--resume-path and --watch need one --algorithm (dqn or ppo)")
    if args.watch and args.resume_path is None:
        parser.error("--watch tests a saved policy: give its --resume-path")
    return args


def main(argv: Sequence[str] | None = None) -> dict[str, float]:
    """Train (or, with ``--watch``, test) the chosen algorithms; return each one's final mean
    return."""
    args = get_args(argv)
    names = ["dqn", "ppo"] if args.algorithm == "both" else [args.algorithm]
    with torch_threads_from_args(args):
        return {name: train(name, args) for name in names}


if __name__ == "__main__":
    main()
