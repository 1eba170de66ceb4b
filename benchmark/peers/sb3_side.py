"""Stable-Baselines3's side of ``benchmark/peers/compare_sb3.py``; runs in the peer venv only.

It imports nothing from this project (the peer venv does not have it) and prints one JSON line:

* ``update``: seconds per ``PPO.train()`` (SB3's update) on one filled rollout of 2,048 Hopper-v5
  steps (8 envs x 256), 10 epochs of minibatch 64, best of ``--repeats`` timed calls;
* ``e2e``: wall seconds of ``PPO.learn`` for ``--steps`` Hopper-v5 steps with 8 envs stepped by
  ``--vec`` (``dummy``: in this process, ``subproc``: one process per env).

The PPO mirrors ``examples/mujoco/mujoco_ppo.py``: separate 64x64 tanh actor and critic (SB3's
default ``MlpPolicy`` for PPO), lr 3e-4, gamma 0.99, GAE 0.95, clip 0.2, vf_coef 0.25,
ent_coef 0, grad-norm clipping 0.5, no advantage normalisation, observations normalised by
``VecNormalize``. One torch thread, as on our side.

    .venv-peers/bin/python benchmark/peers/sb3_side.py update|e2e [--vec dummy|subproc]
"""

import argparse
import json
import time

import gymnasium as gym
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecNormalize

TASK, NUM_ENVS, ROLLOUT = "Hopper-v5", 8, 2048


def build(vec: str, seed: int) -> PPO:
    vec_cls = SubprocVecEnv if vec == "subproc" else DummyVecEnv
    env = VecNormalize(
        make_vec_env(TASK, n_envs=NUM_ENVS, seed=seed, vec_env_cls=vec_cls), norm_reward=False
    )
    return PPO(
        "MlpPolicy",
        env,
        n_steps=ROLLOUT // NUM_ENVS,
        batch_size=64,
        n_epochs=10,
        learning_rate=3e-4,
        gamma=0.99,
        gae_lambda=0.95,
        clip_range=0.2,
        normalize_advantage=False,
        ent_coef=0.0,
        vf_coef=0.25,
        max_grad_norm=0.5,
        policy_kwargs={
            "net_arch": {"pi": [64, 64], "vf": [64, 64]},
            "activation_fn": torch.nn.Tanh,
        },
        device="cpu",
        seed=seed,
        verbose=0,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("mode", choices=["update", "e2e"])
    parser.add_argument("--vec", choices=["dummy", "subproc"], default="dummy")
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(1)
    gym.logger.min_level = 40
    model = build(args.vec, args.seed)
    try:
        if args.mode == "update":
            model.learn(total_timesteps=ROLLOUT)  # one rollout collected (and one update)
            best = float("inf")
            for _ in range(args.repeats):
                start = time.process_time()
                model.train()
                best = min(best, time.process_time() - start)
            record = {"side": "sb3", "mode": "update", "s_per_update": best}
        else:
            start = time.perf_counter()
            model.learn(total_timesteps=args.steps)
            wall = time.perf_counter() - start
            record = {"side": "sb3", "mode": "e2e", "vec": args.vec, "wall_s": wall,
                      "env_steps": model.num_timesteps}  # fmt: skip
    finally:
        model.get_env().close()
    print(json.dumps(record), flush=True)


if __name__ == "__main__":
    main()
