"""Natural Policy Gradient on a MuJoCo task through the high-level API.

The same algorithm and benchmark hyper-parameters as ``mujoco_npg.py`` (see there), declared
with an experiment builder; several seeds run with ``--num-experiments``.

    python -m examples.mujoco.mujoco_npg_hl --task Hopper-v5 --num-experiments 5
"""

from collections.abc import Sequence
from typing import Literal

import torch

from tianshou.data import InfoStats
from tianshou.evaluation.launcher import RegisteredExpLauncher
from tianshou.highlevel.cli import run_cli, script_experiment_config
from tianshou.highlevel.config import OnPolicyTrainingConfig
from tianshou.highlevel.experiment import ExperimentResult, NPGExperimentBuilder
from tianshou.highlevel.mujoco import MujocoEnvFactory
from tianshou.highlevel.params.algorithm_params import NPGParams
from tianshou.highlevel.params.lr_scheduler import LRSchedulerFactoryFactoryLinear
from tianshou.utils.torch_utils import DEFAULT_TORCH_THREADS


def main(
    task: str = "Hopper-v5",
    persistence_base_dir: str = "log",
    num_experiments: int = 1,
    experiment_launcher: RegisteredExpLauncher = RegisteredExpLauncher.SEQUENTIAL,
    seed: int = 42,
    watch: bool = False,
    resume_path: str | None = None,
    buffer_size: int = 4096,
    hidden_sizes: Sequence[int] = (64, 64),
    lr: float = 1e-3,
    gamma: float = 0.99,
    epoch: int = 100,
    epoch_num_steps: int = 30000,
    collection_step_num_env_steps: int = 1024,
    update_step_num_repetitions: int = 1,
    batch_size: int | None = None,
    num_training_envs: int = 16,
    num_test_envs: int = 10,
    return_scaling: bool = True,
    lr_decay: bool = True,
    gae_lambda: float = 0.95,
    action_bound_method: Literal["clip", "tanh"] = "clip",
    advantage_normalization: bool = True,
    optim_critic_iters: int = 20,
    trust_region_size: float = 0.1,
    torch_threads: int | None = DEFAULT_TORCH_THREADS,
) -> ExperimentResult | list[InfoStats | None]:
    """Train NPG on ``task`` with ``num_experiments`` seeds; return the result of the
    single run, or the training results of the seeds (then also evaluated with rliable).

    :param task: the MuJoCo task.
    :param persistence_base_dir: where each run writes its policy and logs.
    :param num_experiments: number of runs, with seeds ``seed``, ``seed + 1``, ...
    :param experiment_launcher: runs several seeds one after another (``SEQUENTIAL``) or in
        parallel (``JOBLIB``, ``RAY``); a single run always runs in this process.
    :param watch: no training: run a few episodes of the policy of ``resume_path`` (shown
        when there is a display).
    :param resume_path: an earlier run's directory (or its ``policy_state_dict.pt``) whose
        policy to start from, or to watch.
    :param batch_size: minibatch size; None learns from each collection in one batch.
    :param lr_decay: decay the learning rate linearly to 0 over the run.
    :param torch_threads: torch's intra-op threads while the experiments run (None: torch's
        default, one per core).
    """
    training_config = OnPolicyTrainingConfig(
        torch_threads=torch_threads,
        max_epochs=epoch,
        epoch_num_steps=epoch_num_steps,
        batch_size=batch_size,
        num_training_envs=num_training_envs,
        num_test_envs=num_test_envs,
        buffer_size=buffer_size,
        collection_step_num_env_steps=collection_step_num_env_steps,
        update_step_num_repetitions=update_step_num_repetitions,
    )
    return (
        NPGExperimentBuilder(
            MujocoEnvFactory(task, obs_norm=True),
            script_experiment_config(
                persistence_base_dir=persistence_base_dir,
                seed=seed,
                watch=watch,
                resume_path=resume_path,
            ),
            training_config,
        )
        .with_npg_params(
            NPGParams(
                gamma=gamma,
                gae_lambda=gae_lambda,
                action_bound_method=action_bound_method,
                return_scaling=return_scaling,
                advantage_normalization=advantage_normalization,
                optim_critic_iters=optim_critic_iters,
                trust_region_size=trust_region_size,
                lr=lr,
                lr_scheduler=LRSchedulerFactoryFactoryLinear(training_config) if lr_decay else None,
            )
        )
        .with_actor_factory_default(hidden_sizes, torch.nn.Tanh, continuous_unbounded=True)
        .with_critic_factory_default(hidden_sizes, torch.nn.Tanh)
        .build_and_run(num_experiments, experiment_launcher)
    )


if __name__ == "__main__":
    run_cli(main, data_parallel=True)
