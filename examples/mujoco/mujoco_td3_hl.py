"""Twin Delayed DDPG on a MuJoCo task through the high-level API.

The same algorithm and benchmark hyper-parameters as ``mujoco_td3.py`` (see there), declared
with an experiment builder; several seeds run with ``--num-experiments``.

    python -m examples.mujoco.mujoco_td3_hl --task Hopper-v5 --num-experiments 5
"""

from collections.abc import Sequence

from tianshou.data import InfoStats
from tianshou.evaluation.launcher import RegisteredExpLauncher
from tianshou.highlevel.cli import run_cli, script_experiment_config
from tianshou.highlevel.config import OffPolicyTrainingConfig
from tianshou.highlevel.experiment import ExperimentResult, TD3ExperimentBuilder
from tianshou.highlevel.mujoco import MujocoEnvFactory
from tianshou.highlevel.params.algorithm_params import TD3Params
from tianshou.highlevel.params.env_param import MaxActionScaled
from tianshou.highlevel.params.noise import MaxActionScaledGaussian
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
    actor_lr: float = 3e-4,
    critic_lr: float = 3e-4,
    gamma: float = 0.99,
    tau: float = 0.005,
    start_timesteps: int = 25000,
    epoch: int = 200,
    epoch_num_steps: int = 5000,
    collection_step_num_env_steps: int = 1,
    update_step_num_gradient_steps_per_sample: float = 1.0,
    n_step_return_horizon: int = 1,
    batch_size: int = 256,
    num_training_envs: int = 1,
    num_test_envs: int = 10,
    exploration_noise: float = 0.1,
    policy_noise: float = 0.2,
    noise_clip: float = 0.5,
    update_actor_freq: int = 2,
    torch_threads: int | None = DEFAULT_TORCH_THREADS,
) -> ExperimentResult | list[InfoStats | None]:
    """Train TD3 on ``task`` with ``num_experiments`` seeds; return the result of the
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
    :param exploration_noise: std of the Gaussian action noise, as a fraction of the max action.
    :param policy_noise: std of the target-action smoothing noise (fraction of the max action).
    :param noise_clip: clip of that noise (fraction of the max action).
    :param torch_threads: torch's intra-op threads while the experiments run (None: torch's
        default, one per core).
    """
    return (
        TD3ExperimentBuilder(
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
        .with_td3_params(
            TD3Params(
                actor_lr=actor_lr,
                critic1_lr=critic_lr,
                critic2_lr=critic_lr,
                gamma=gamma,
                tau=tau,
                exploration_noise=MaxActionScaledGaussian(exploration_noise),
                policy_noise=MaxActionScaled(policy_noise),
                noise_clip=MaxActionScaled(noise_clip),
                update_actor_freq=update_actor_freq,
                n_step_return_horizon=n_step_return_horizon,
            )
        )
        .with_actor_factory_default(hidden_sizes)
        .with_common_critic_factory_default(hidden_sizes)
        .build_and_run(num_experiments, experiment_launcher)
    )


if __name__ == "__main__":
    run_cli(main, data_parallel=True)
