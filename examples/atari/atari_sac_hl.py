"""Discrete Soft Actor-Critic on an Atari game through the high-level API.

The same algorithm and published hyper-parameters as ``atari_sac.py`` (see there), declared with
an experiment builder.

    python -m examples.atari.atari_sac_hl --task PongNoFrameskip-v4
"""

from tianshou.data import InfoStats
from tianshou.env.atari.atari_network import ActorFactoryAtariDQN
from tianshou.env.atari.atari_wrapper import AtariEnvFactory, AtariEpochStopCallback
from tianshou.evaluation.launcher import RegisteredExpLauncher
from tianshou.highlevel.cli import run_cli, script_experiment_config
from tianshou.highlevel.config import OffPolicyTrainingConfig
from tianshou.highlevel.experiment import (
    DiscreteSACExperimentBuilder,
    ExperimentResult,
)
from tianshou.highlevel.params.algorithm_params import DiscreteSACParams
from tianshou.highlevel.params.alpha import AutoAlphaFactoryDefault
from tianshou.utils.torch_utils import DEFAULT_TORCH_THREADS


def main(
    task: str = "PongNoFrameskip-v4",
    persistence_base_dir: str = "log",
    num_experiments: int = 1,
    experiment_launcher: RegisteredExpLauncher = RegisteredExpLauncher.SEQUENTIAL,
    seed: int = 4213,
    watch: bool = False,
    resume_path: str | None = None,
    scale_obs: bool = False,
    buffer_size: int = 100000,
    actor_lr: float = 1e-5,
    critic_lr: float = 1e-5,
    gamma: float = 0.99,
    n_step_return_horizon: int = 3,
    tau: float = 0.005,
    alpha: float = 0.05,
    auto_alpha: bool = False,
    alpha_lr: float = 3e-4,
    epoch: int = 100,
    epoch_num_steps: int = 100000,
    collection_step_num_env_steps: int = 10,
    update_step_num_gradient_steps_per_sample: float = 0.1,
    batch_size: int = 64,
    hidden_size: int = 512,
    num_training_envs: int = 10,
    num_test_envs: int = 10,
    frames_stack: int = 4,
    torch_threads: int | None = DEFAULT_TORCH_THREADS,
) -> ExperimentResult | list[InfoStats | None]:
    """Train discrete SAC on the Atari game ``task`` and return the experiment's result.

    :param task: a gymnasium ALE task without frame skip.
    :param persistence_base_dir: where the run writes its policy and logs.
    :param num_experiments: number of runs, with seeds ``seed``, ``seed + 1``, ... (several
        are evaluated together with rliable).
    :param experiment_launcher: runs several seeds one after another (``SEQUENTIAL``) or in
        parallel (``JOBLIB``, ``RAY``); a single run always runs in this process.
    :param watch: no training: run a few episodes of the policy of ``resume_path`` (shown
        when there is a display).
    :param resume_path: an earlier run's directory (or its ``policy_state_dict.pt``) whose
        policy to start from, or to watch.
    :param scale_obs: let the envs scale the pixels to [0, 1].
    :param n_step_return_horizon: n-step return horizon.
    :param alpha: the entropy coefficient, unless ``auto_alpha``.
    :param auto_alpha: tune the entropy coefficient towards 0.98 x log(number of actions).
    :param hidden_size: width of the layer on the shared Nature-DQN torso.
    :param torch_threads: torch's intra-op threads while the experiments run (None: torch's
        default, one per core).
    """
    return (
        DiscreteSACExperimentBuilder(
            AtariEnvFactory(task, frames_stack, scale=scale_obs),
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
                replay_buffer_ignore_obs_next=True,
                replay_buffer_save_only_last_obs=True,
                replay_buffer_stack_num=frames_stack,
            ),
        )
        .with_sac_params(
            DiscreteSACParams(
                actor_lr=actor_lr,
                critic1_lr=critic_lr,
                critic2_lr=critic_lr,
                gamma=gamma,
                tau=tau,
                alpha=(
                    AutoAlphaFactoryDefault(lr=alpha_lr, target_entropy_coefficient=0.98)
                    if auto_alpha
                    else alpha
                ),
                n_step_return_horizon=n_step_return_horizon,
                deterministic_eval=True,  # as the procedural script's policy
            )
        )
        .with_actor_factory(
            ActorFactoryAtariDQN(
                scale_obs=False, features_only=True, output_dim_added_layer=hidden_size
            )
        )
        .with_common_critic_factory_use_actor()
        .with_epoch_stop_callback(AtariEpochStopCallback(task))
        .build_and_run(num_experiments, experiment_launcher)
    )


if __name__ == "__main__":
    run_cli(main, data_parallel=True)
