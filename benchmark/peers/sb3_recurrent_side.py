"""sb3-contrib's side of ``benchmark/peers/compare_sb3_recurrent.py``; runs in the peer venv only.

It imports nothing from this project (the peer venv does not have it) and prints one JSON line:
the wall seconds of ``RecurrentPPO.learn`` for ``--steps`` steps of CartPole-v1 with both
velocities hidden (the observation keeps the cart position and the pole angle, as
``examples/pomdp/pomdp_envs.py`` does), split into collecting (``collect_rollouts``) and
updating (``train``), and the mean return of 20 test episodes of the trained policy (greedy).

The configuration is the one ``compare_sb3_recurrent.py`` gives our side: 8 envs in one process
(``DummyVecEnv``), rollouts of 256 steps per env, an LSTM of width 64 for the actor and another
for the critic (``MlpLstmPolicy``'s default, no shared LSTM), linear heads on the LSTM outputs,
4 epochs of minibatches of 256 steps, lr 3e-4, gamma 0.99, GAE 0.95, clip 0.2, vf_coef 0.5,
no entropy bonus, grad-norm clipping 0.5, advantages normalised per minibatch. One torch thread.

    .venv-peers/bin/python benchmark/peers/sb3_recurrent_side.py --steps 51200 --seed 0
"""

import argparse
import json
import time
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from sb3_contrib import RecurrentPPO
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv

NUM_ENVS, ROLLOUT_PER_ENV, HIDDEN = 8, 256, 64
VISIBLE = (0, 2)


class HiddenVelocities(gym.ObservationWrapper):
    """CartPole observed by its cart position and pole angle only."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        space = env.observation_space
        self.observation_space = gym.spaces.Box(
            space.low[list(VISIBLE)], space.high[list(VISIBLE)], dtype=space.dtype
        )

    def observation(self, observation: np.ndarray) -> np.ndarray:
        return observation[list(VISIBLE)]


def build(seed: int) -> RecurrentPPO:
    env = make_vec_env(
        "CartPole-v1",
        n_envs=NUM_ENVS,
        seed=seed,
        vec_env_cls=DummyVecEnv,
        wrapper_class=HiddenVelocities,
    )
    return RecurrentPPO(
        "MlpLstmPolicy",
        env,
        n_steps=ROLLOUT_PER_ENV,
        batch_size=256,
        n_epochs=4,
        learning_rate=3e-4,
        gamma=0.99,
        gae_lambda=0.95,
        clip_range=0.2,
        ent_coef=0.0,
        vf_coef=0.5,
        max_grad_norm=0.5,
        policy_kwargs={"lstm_hidden_size": HIDDEN, "n_lstm_layers": 1, "net_arch": []},
        device="cpu",
        seed=seed,
        verbose=0,
    )


def timed(seconds: dict[str, float], key: str, method: Any) -> Any:
    def call(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return method(*args, **kwargs)
        finally:
            seconds[key] += time.perf_counter() - start

    return call


def test_return(model: RecurrentPPO, seed: int, episodes: int = 20) -> float:
    env = HiddenVelocities(gym.make("CartPole-v1"))
    returns = []
    for episode in range(episodes):
        obs, _ = env.reset(seed=seed + episode)
        state, start, total, done = None, np.ones((1,), dtype=bool), 0.0, False
        while not done:
            action, state = model.predict(obs, state=state, episode_start=start, deterministic=True)
            obs, reward, terminated, truncated, _ = env.step(int(action))
            start = np.zeros((1,), dtype=bool)
            total += float(reward)
            done = terminated or truncated
        returns.append(total)
    return float(np.mean(returns))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=51_200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(1)
    model = build(args.seed)
    seconds = {"collect_s": 0.0, "update_s": 0.0}
    model.collect_rollouts = timed(seconds, "collect_s", model.collect_rollouts)  # type: ignore[method-assign]
    model.train = timed(seconds, "update_s", model.train)  # type: ignore[method-assign]
    start = time.perf_counter()
    model.learn(total_timesteps=args.steps)
    wall = time.perf_counter() - start
    model.get_env().close()
    record = {
        "side": "sb3_contrib",
        "wall_s": wall,
        "env_steps": model.num_timesteps,
        **seconds,
        "test_return": test_return(model, 1000 + args.seed),
    }
    print(json.dumps(record), flush=True)


if __name__ == "__main__":
    main()
