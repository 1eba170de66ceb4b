"""Randomized Ensembled Double Q-learning on a MuJoCo task through the high-level API.

The same algorithm and benchmark hyper-parameters as ``mujoco_redq.py`` (see there), declared
with an experiment builder; several seeds run with ``--num-experiments``.

    python -m examples.mujoco.mujoco_redq_hl --task Hopper-v5 --num-experiments 5
"""

from collections.abc import Sequence
from typing import Literal

from tianshou.data import InfoStats
from tianshou.evaluation.launcher import RegisteredExpLauncher
from tianshou.highlevel.cli import run_cli, script_experiment_config
from tianshou.highlevel.config import OffPolicyTrainingConfig
from tianshou.highlevel.experiment import ExperimentResult, REDQExperimentBuilder
from tianshou.highlevel.mujoco import MujocoEnvFactory
from tianshou.highlevel.params.algorithm_params import REDQParams
from tianshou.highlevel.params.alpha import AutoAlphaFactoryDefault
from tianshou.utils.torch_utils import DEFAULT_TORCH_THREADS


def main(
    task: str = "Hopper-v5",
    persistence_base_dir: str = "log",
    num_experiments: int = 1,
    experiment_launcher: RegisteredExpLauncher = RegisteredExpLauncher.SEQUENTIAL,
    seed: int = 42,
    watch: bool = False,
    resume_path: str | None = None,
    buffer_size: int = 1000000,
    hidden_sizes: Sequence[int] = (256, 256),
    actor_lr: float = 1e-3,
    critic_lr: float = 1e-3,
    gamma: float = 0.99,
    tau: float = 0.005,
    start_timesteps: int = 10000,
    epoch: int = 200,
    epoch_num_steps: int = 5000,
    collection_step_num_env_steps: int = 1,
    update_step_num_gradient_steps_per_sample: float = 20.0,
    n_step_return_horizon: int = 1,
    batch_size: int = 256,
    num_training_envs: int = 1,
    num_test_envs: int = 10,
    ensemble_size: int = 10,
    subset_size: int = 2,
    actor_delay: int = 20,
    target_mode: Literal["min", "mean"] = "min",
    alpha: float = 0.2,
    auto_alpha: bool = False,
    alpha_lr: float = 3e-4,
    torch_threads: int | None = DEFAULT_TORCH_THREADS,
) -> ExperimentResult | list[InfoStats | None]:
    """Train REDQ on ``task`` with ``num_experiments`` seeds; return the result of the
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
    :param start_timesteps: uniformly random env steps collected before training.
    :param subset_size: critics of the ensemble that form each target.
    :param actor_delay: critic updates per actor update.
    :param alpha: the entropy coefficient, unless ``auto_alpha``.
    :param auto_alpha: tune the entropy coefficient towards an entropy of ``-dim(A)``.
    :param torch_threads: torch's intra-op threads while the experiments run (None: torch's
        default, one per core).
    """
    return (
        REDQExperimentBuilder(
            MujocoEnvFactory(task, obs_norm=False),
            script_experiment_config(
                persistence_base_dir=persistence_base_dir,
                seed=seed,
                watch=watch,
                resume_path=resume_path,
            ),
            OffPolicyTrainingConfig(
                torch_threads=torch_threads,
                max_epochs=epoch,
                epoch_num_steps=epoch_num_steps,
                batch_size=batch_size,
                num_training_envs=num_training_envs,
                num_test_envs=num_test_envs,
                buffer_size=buffer_size,
                collection_step_num_env_steps=collection_step_num_env_steps,
                update_step_num_gradient_steps_per_sample=update_step_num_gradient_steps_per_sample,
                start_timesteps=start_timesteps,
                start_timesteps_random=True,
            ),
        )
        .with_redq_params(
            REDQParams(
                actor_lr=actor_lr,
                critic_lr=critic_lr,
                gamma=gamma,
                tau=tau,
                alpha=AutoAlphaFactoryDefault(lr=alpha_lr) if auto_alpha else alpha,
                n_step_return_horizon=n_step_return_horizon,
                deterministic_eval=True,  # as the procedural script's policy
                ensemble_size=ensemble_size,
                subset_size=subset_size,
                actor_delay=actor_delay,
                target_mode=target_mode,
            )
        )
        .with_actor_factory_default(
            hidden_sizes, continuous_unbounded=True, continuous_conditioned_sigma=True
        )
        .with_critic_ensemble_factory_default(hidden_sizes)
        .build_and_run(num_experiments, experiment_launcher)
    )


if __name__ == "__main__":
    run_cli(main, data_parallel=True)
