"""Our side of ``benchmark/peers/compare_sb3.py``'s end-to-end Hopper-v5 comparison, and its
bare limit: both runs take the same env steps and updates, and the bare loop normalises
observations exactly as ``VectorEnvNormObs`` does. (SB3's side runs in the peer venv, which
``make test`` does not build.)"""

import numpy as np
import torch

from benchmark.bare_ppo import RunningObsNorm
from benchmark.peers.compare_sb3 import NUM_ENVS, bare_hopper_run, our_hopper_run
from tianshou.utils.statistics import RunningMeanStd


def test_bare_normalisation_matches_the_library() -> None:
    rng = np.random.default_rng(0)
    bare, library = RunningObsNorm(), RunningMeanStd()
    for n in (8, 3, 8, 1, 1000):
        obs = rng.normal(2.0, 3.0, size=(n, 4))
        library.update(obs)
        np.testing.assert_allclose(bare(obs), library.norm(obs), rtol=1e-12, atol=1e-12)
    far = np.full((1, 4), 302.0)  # about 30 deviations out: clipped to 10, as the library clips
    bare_far = bare(far)
    library.update(far)
    np.testing.assert_allclose(bare_far, library.norm(far))
    assert bare_far.max() == 10.0


def test_both_hopper_runs_take_the_same_env_steps() -> None:
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        wall, env_steps, backend, compile_s = our_hopper_run(steps_per_epoch=NUM_ENVS)
        bare_wall, bare_steps = bare_hopper_run(steps_per_epoch=NUM_ENVS)
    finally:
        torch.set_num_threads(previous)
    # five epochs of one 2,048-step rollout and one update each, on both sides
    assert env_steps == bare_steps == 5 * 2048
    assert backend != "SubprocVectorEnv"  # EnvPool is installed with the project
    assert wall > 0 and bare_wall > 0 and compile_s == 0.0
