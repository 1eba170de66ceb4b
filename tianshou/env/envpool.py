"""EnvPool: C++-batched environments, with a subprocess fallback where EnvPool can't be used.

An EnvPool env made with ``env_type="gymnasium"`` already behaves like a vector env and is
passed to a ``Collector`` directly: ``reset(env_id=ids)`` returns ``(obs, info)`` and
``step(action, env_id=ids)`` returns ``(obs, rew, terminated, truncated, info)``, stacked over
the envs in ``ids``, with ``info`` a dict of arrays (``info["env_id"]`` among them) instead of an
object array of dicts. ``envpool`` is imported only when :func:`make_envpool_env` runs.
"""

from functools import partial
from typing import Any

import gymnasium as gym

from tianshou.env.venvs import SubprocVectorEnv


def make_envpool_env(task: str, num_envs: int, seed: int | None = None, **kwargs: Any) -> Any:
    """Build ``num_envs`` copies of ``task`` as one EnvPool env, or a :class:`SubprocVectorEnv`.

    EnvPool is used when it is installed and knows ``task``; otherwise each env is built with
    ``gymnasium.make(task, **kwargs)`` in its own process. Either way env ``i`` is seeded with
    ``seed + i``. (The two are different implementations of a task, so their trajectories
    differ even with equal seeds.)

    :param task: environment id, e.g. ``"CartPole-v1"`` or ``"Hopper-v5"``.
    :param num_envs: number of parallel environments.
    :param seed: base seed; None leaves each backend's default seeding.
    :param kwargs: extra options for ``envpool.make`` or ``gymnasium.make``, whichever is used.
    """
    try:
        import envpool
    except ImportError:
        envpool = None  # type: ignore[assignment]
    if envpool is not None and task in envpool.list_all_envs():
        options = kwargs if seed is None else {**kwargs, "seed": seed}
        return envpool.make(task, env_type="gymnasium", num_envs=num_envs, **options)
    venv = SubprocVectorEnv([partial(gym.make, task, **kwargs) for _ in range(num_envs)])
    if seed is not None:
        venv.seed(seed)
    return venv
