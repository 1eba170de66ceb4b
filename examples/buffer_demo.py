"""Fill a VectorReplayBuffer from several CartPole-v1 environments and inspect what it holds.

This is ``make demo`` until the algorithm layer lands: a random policy steps 4 environments, each
environment writes into its own sub-buffer, and finished episodes are reported as the buffer sees
them. It then samples a training batch and shows the episode structure the buffer tracks.
"""

import time

import gymnasium as gym
import numpy as np

from tianshou.data import Batch, VectorReplayBuffer

ENV_NUM = 4
STEPS = 5_000


def main() -> None:
    envs = [gym.make("CartPole-v1") for _ in range(ENV_NUM)]
    obs = np.stack([env.reset(seed=i)[0] for i, env in enumerate(envs)])
    buffer = VectorReplayBuffer(total_size=20_000, buffer_num=ENV_NUM)
    buffer_ids = np.arange(ENV_NUM)
    returns: list[float] = []
    start = time.perf_counter()
    for _ in range(STEPS // ENV_NUM):
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
    print(f"stepped {ENV_NUM} CartPole-v1 envs for {STEPS} steps in {elapsed:.2f} s")
    print(f"buffer holds {len(buffer)} transitions in {buffer.buffer_num} sub-buffers")
    print(
        f"finished episodes: {len(returns)}, mean return of a random policy: {np.mean(returns):.1f}"
    )
    print(f"sampled batch: obs {batch.obs.shape}, act {batch.act.shape}, rew {batch.rew.shape}")
    print(f"unfinished episode ends per sub-buffer: {buffer.unfinished_index()}")
    print(f"first sampled index {indices[0]}: next {buffer.next(indices[:1])[0]}")


if __name__ == "__main__":
    main()
