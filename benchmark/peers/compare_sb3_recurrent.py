"""Recurrent PPO next to sb3-contrib's ``RecurrentPPO`` on CartPole with the velocities hidden.

The one peer library with a maintained recurrent PPO is sb3-contrib; it runs in the peer venv
(``make bench-peers`` creates ``.venv-peers`` from ``benchmark/peers/requirements.txt``) through
``benchmark/peers/sb3_recurrent_side.py``, and our side runs here. Both train for ``--steps`` env
steps with the same configuration: 8 envs in one process, rollouts of 2,048 steps, an LSTM of
width 64 for the actor and another for the critic, 4 epochs of minibatches of 256 steps, lr
3e-4, gamma 0.99, GAE 0.95, clip 0.2, vf_coef 0.5, no entropy bonus, grad-norm clipping 0.5,
advantages normalised per minibatch, one torch thread. The networks differ in one layer: ours
embed the observation (a width-64 linear layer and ReLU) before the LSTM, theirs feed it to the
LSTM directly, so ours does somewhat more arithmetic per step. Our chunks are at most
``--chunk-len`` steps long (16, our default); sb3-contrib replays each minibatch's episode
segments whole.

One JSON line per seed (``recurrent_ppo_vs_sb3_contrib``): wall seconds, their split into
collecting and updating, env steps per second and the speed-up (theirs over ours, higher is
better for us), and each side's mean return over 20 greedy test episodes at the end (for
information: the learning curves of two implementations differ; no target).

    python -m benchmark.peers.compare_sb3_recurrent [--steps 51200] [--seeds 0 1]
"""

import argparse
import json
import os
import subprocess
import time
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch.distributions import Categorical

from benchmark.common import emit
from tianshou.algorithm.algorithm_base import Algorithm
from tianshou.algorithm.modelfree.recurrent_ppo import RecurrentActorCriticPolicy, RecurrentPPO
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import Collector, CollectStats, VectorReplayBuffer
from tianshou.env import DummyVectorEnv
from tianshou.env.pomdp import cartpole_without_velocities
from tianshou.trainer import OnPolicyTrainerParams
from tianshou.utils.net.recurrent import RecurrentDiscreteActor, RecurrentValueNet

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PEER_PYTHON = os.path.join(ROOT, ".venv-peers", "bin", "python")
PEER_SIDE = os.path.join(ROOT, "benchmark", "peers", "sb3_recurrent_side.py")
NUM_ENVS, ROLLOUT, HIDDEN = 8, 2048, 64


def sb3_contrib(steps: int, seed: int) -> dict[str, Any]:
    """Run ``sb3_recurrent_side.py`` in the peer venv and return its JSON line."""
    if not os.path.exists(PEER_PYTHON):
        raise SystemExit("no .venv-peers: run `make bench-peers` (it creates it) first")
    out = subprocess.run(
        [PEER_PYTHON, PEER_SIDE, "--steps", str(steps), "--seed", str(seed)],
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def _logits(logits: torch.Tensor) -> Categorical:
    return Categorical(logits=logits)


def our_algorithm(chunk_len: int) -> RecurrentPPO:
    policy = RecurrentActorCriticPolicy(
        actor=RecurrentDiscreteActor(2, 2, HIDDEN),
        critic=RecurrentValueNet(2, HIDDEN),
        dist_fn=_logits,
        action_space=gym.spaces.Discrete(2),
        deterministic_eval=True,
    )
    return RecurrentPPO(
        policy=policy,
        optim=AdamOptimizerFactory(lr=3e-4),
        chunk_len=chunk_len,
        eps_clip=0.2,
        vf_coef=0.5,
        ent_coef=0.0,
        max_grad_norm=0.5,
        gae_lambda=0.95,
        gamma=0.99,
        advantage_normalization=True,
    )


def _envs(num: int, seed: int) -> DummyVectorEnv:
    envs = DummyVectorEnv([cartpole_without_velocities for _ in range(num)])
    envs.seed(seed)
    return envs


class _Stopwatch:
    """Wall seconds spent in the collector's ``collect`` and the algorithm's updates."""

    def __init__(self, collector: Collector, algorithm: Algorithm) -> None:
        self.seconds = {"collect_s": 0.0, "update_s": 0.0}
        collector.collect = self._timed("collect_s", collector.collect)  # type: ignore[method-assign]
        algorithm._update = self._timed("update_s", algorithm._update)  # type: ignore[method-assign]

    def _timed(self, key: str, method: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                self.seconds[key] += time.perf_counter() - start

        return call


def ours(steps: int, seed: int, chunk_len: int) -> dict[str, Any]:
    """Train our recurrent PPO for ``steps`` env steps; wall seconds, their split, test return."""
    torch.manual_seed(seed)
    np.random.seed(seed)
    algorithm = our_algorithm(chunk_len)
    envs = _envs(NUM_ENVS, seed)
    collector = Collector[CollectStats](algorithm, envs, VectorReplayBuffer(ROLLOUT, NUM_ENVS))
    watch = _Stopwatch(collector, algorithm)
    start = time.perf_counter()
    result = algorithm.run_training(
        OnPolicyTrainerParams(
            training_collector=collector,
            max_epochs=max(1, steps // ROLLOUT),
            epoch_num_steps=ROLLOUT,
            collection_step_num_env_steps=ROLLOUT,
            update_step_num_repetitions=4,
            batch_size=256,
            test_collector=None,
            show_progress=False,
            verbose=False,
        )
    )
    wall = time.perf_counter() - start
    envs.close()
    test = Collector[CollectStats](algorithm, _envs(10, 1000 + seed))
    test.reset()
    return {
        "wall_s": wall,
        "env_steps": result.train_step,
        **watch.seconds,
        "test_return": float(test.collect(n_episode=20).returns.mean()),
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=51_200, help="env steps per run")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--chunk-len", type=int, default=16, help="our longest sequence chunk")
    args = parser.parse_args(argv)
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for seed in args.seeds:
            theirs = sb3_contrib(args.steps, seed)
            mine = ours(args.steps, seed, args.chunk_len)
            rate, their_rate = (
                mine["env_steps"] / mine["wall_s"],
                theirs["env_steps"] / theirs["wall_s"],
            )
            emit(
                {
                    "bench": "recurrent_ppo_vs_sb3_contrib",
                    "seed": seed,
                    **mine,
                    "env_steps_per_s": rate,
                    "sb3_contrib_wall_s": theirs["wall_s"],
                    "sb3_contrib_env_steps": theirs["env_steps"],
                    "sb3_contrib_collect_s": theirs["collect_s"],
                    "sb3_contrib_update_s": theirs["update_s"],
                    "sb3_contrib_test_return": theirs["test_return"],
                    "speedup": rate / their_rate,
                    "chunk_len": args.chunk_len,
                }
            )
    finally:
        torch.set_num_threads(previous)


if __name__ == "__main__":
    main()
