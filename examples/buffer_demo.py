"""Fill a VectorReplayBuffer from several CartPole-v1 environments and inspect what it holds.

This is ``make demo`` until the algorithm layer lands: a random policy steps 4 environments, each
environment writes into its own sub-buffer, and finished episodes are reported as the buffer sees
them. It then samples a training batch and shows the episode structure the buffer tracks.

    python examples/buffer_demo.py [--num-envs 4] [--steps 5000]
"""

import argparse
import time
from collections.abc import Sequence

import gymnasium as gym
import numpy as np

from tianshou.data import Batch, VectorReplayBuffer
from tianshou.utils.cli import ArgumentParser, add_torch_threads_option, torch_threads_from_args


def get_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--num-envs", type=int, default=4, help="envs, one sub-buffer each")
    parser.add_argument("--steps", type=int, default=5_000, help="env steps over all envs")
    add_torch_threads_option(parser)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    args = get_args(argv)
    with torch_threads_from_args(args):
        fill_and_inspect(args.num_envs, args.steps)


def fill_and_inspect(num_envs: int, steps: int) -> None:
    """Step ``num_envs`` CartPole envs randomly for ``steps`` env steps into a buffer and print
    what it holds."""
    if num_envs < 1 or steps < num_envs:
        raise ValueError(f"need at least 1 env and as many steps, got {num_envs} and {steps}")
    envs = [gym.make("CartPole-v1") for _ in range(num_envs)]
    obs = np.stack([env.reset(seed=i)[0] for i, env in enumerate(envs)])
    buffer = VectorReplayBuffer(total_size=max(20_000, steps), buffer_num=num_envs)
    buffer_ids = np.arange(num_envs)
    returns: list[float] = []
    start = time.perf_counter()
    for _ in range(steps // num_envs):
        act = np.array([env.action_space.sample() for env in envs])
        results = [env.step(a) for env, a in zip(envs, act, strict=True)]
        obs_next, rew, terminated, truncated, _ = (np.array(x) for x in zip(*results, strict=True))
        step = Batch(
            obs=obs, act=act, rew=rew, terminated=terminated, truncated=truncated, obs_next=obs_next
        )
        _, ep_return, _, _ = buffer.add(step, buffer_ids=buffer_ids)
        done = terminated | truncated
        returns.extend(ep_return[done].tolist())
        for i in np.flatnonzero(done):
            obs_next[i] = envs[i].reset()[0]
        obs = obs_next
    elapsed = time.perf_counter() - start

    batch, indices = buffer.sample(256)
    print(f"stepped {num_envs} CartPole-v1 envs for {steps} steps in {elapsed:.2f} s")
    print(f"buffer holds {len(buffer)} transitions in {buffer.buffer_num} sub-buffers")
    print(
        f"finished episodes: {len(returns)}, mean return of a random policy: {np.mean(returns):.1f}"
    )
    print(f"sampled batch: obs {batch.obs.shape}, act {batch.act.shape}, rew {batch.rew.shape}")
    print(f"unfinished episode ends per sub-buffer: {buffer.unfinished_index()}")
    print(f"first sampled index {indices[0]}: next {buffer.next(indices[:1])[0]}")


if __name__ == "__main__":
    main()
