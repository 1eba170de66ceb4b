"""The observation statistics of an observation-normalising vector env
(:class:`~tianshou.env.VectorEnvNormObs`) as a file of plain arrays.

A policy trained on normalised observations is only valid with the statistics it was trained
on, so runners save them next to the policy and give them back to the envs that evaluate it.
The file is an ``.npz`` of plain arrays: loading it runs no code, unlike a pickle.
"""

import numpy as np

from tianshou.env.venv_wrappers import VectorEnvNormObs
from tianshou.utils.statistics import RunningMeanStd

OBS_RMS_FILE = "obs_rms.npz"
"""The file name the statistics are saved under, next to the policy."""


def array_obs_rms(envs: VectorEnvNormObs) -> RunningMeanStd:
    """The observation statistics of ``envs``, which normalise MuJoCo's array observations
    (one :class:`RunningMeanStd`, not the per-key statistics of dict observations)."""
    obs_rms = envs.get_obs_rms()
    if not isinstance(obs_rms, RunningMeanStd):
        raise TypeError(f"expected statistics of array observations, got {type(obs_rms).__name__}")
    return obs_rms


def save_obs_rms(obs_rms: RunningMeanStd, path: str) -> None:
    """Write observation statistics as plain arrays (``.npz``; loading them runs no code)."""
    np.savez(
        path,
        mean=np.asarray(obs_rms.mean, dtype=np.float64),
        var=np.asarray(obs_rms.var, dtype=np.float64),
        count=np.asarray(obs_rms.count, dtype=np.float64),
        clip_max=np.asarray(obs_rms.clip_max or 0.0, dtype=np.float64),
        eps=np.asarray(obs_rms.eps, dtype=np.float64),
    )


def load_obs_rms(path: str) -> RunningMeanStd:
    """Read statistics written by :func:`save_obs_rms`."""
    with np.load(path, allow_pickle=False) as data:
        obs_rms = RunningMeanStd(
            mean=data["mean"],
            std=data["var"],
            clip_max=float(data["clip_max"]) or None,
            epsilon=float(data["eps"]),
        )
        obs_rms.count = float(data["count"])  # type: ignore[assignment]
    return obs_rms
