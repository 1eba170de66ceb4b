"""Deep Q-Network on CartPole through the high-level API: a complete experiment in one builder
chain, trained until the mean test return reaches 195, then watched.

    python -m examples.discrete.discrete_dqn_hl
    python -m examples.discrete.discrete_dqn_hl --no-watch --persistence-enabled
"""

from collections.abc import Sequence

from tianshou.data import InfoStats
from tianshou.evaluation.launcher import RegisteredExpLauncher
from tianshou.highlevel.cli import restore_directory_of, run_cli
from tianshou.highlevel.config import OffPolicyTrainingConfig
from tianshou.highlevel.env import EnvFactoryRegistered, VectorEnvType
from tianshou.highlevel.experiment import DQNExperimentBuilder, ExperimentConfig, ExperimentResult
from tianshou.highlevel.params.algorithm_params import DQNParams
from tianshou.highlevel.trainer import EpochStopCallbackRewardThreshold
from tianshou.utils.torch_utils import DEFAULT_TORCH_THREADS


def main(
    task: str = "CartPole-v1",
    persistence_base_dir: str = "log",
    num_experiments: int = 1,
    experiment_launcher: RegisteredExpLauncher = RegisteredExpLauncher.SEQUENTIAL,
    persistence_enabled: bool = False,
    seed: int = 0,
    watch: bool = True,
    resume_path: str | None = None,
    watch_num_episodes: int = 100,
    watch_render: float = 1 / 35,
    epoch: int = 10,
    epoch_num_steps: int = 10000,
    batch_size: int = 64,
    num_training_envs: int = 10,
    num_test_envs: int = 100,
    buffer_size: int = 20000,
    collection_step_num_env_steps: int = 10,
    update_step_num_gradient_steps_per_sample: float = 1 / 10,
    hidden_sizes: Sequence[int] = (64, 64),
    lr: float = 1e-3,
    gamma: float = 0.9,
    n_step_return_horizon: int = 3,
    target_update_freq: int = 320,
    eps_train: float = 0.3,
    eps_test: float = 0.0,
    reward_threshold: float = 195,
    torch_threads: int | None = DEFAULT_TORCH_THREADS,
) -> ExperimentResult | list[InfoStats | None]:
    """Train DQN on ``task`` and return the experiment's result.

    :param task: a gymnasium task with discrete actions.
    :param persistence_base_dir: where the run writes its policy and logs.
    :param num_experiments: number of runs, with seeds ``seed``, ``seed + 1``, ... (several
        are evaluated together with rliable).
    :param experiment_launcher: runs several seeds one after another (``SEQUENTIAL``) or in
        parallel (``JOBLIB``, ``RAY``); a single run always runs in this process.
    :param persistence_enabled: whether to write them at all.
    :param watch: after training, run ``watch_num_episodes`` episodes of the policy, shown in a
        window (when there is a display) with ``watch_render`` seconds between frames.
    :param resume_path: an earlier run's directory (or its ``policy_state_dict.pt``) whose
        policy to start from.
    :param n_step_return_horizon: n-step return horizon.
    :param eps_train: exploration rate while collecting training data.
    :param eps_test: exploration rate in test episodes.
    :param reward_threshold: stop training once the mean test return reaches this.
    :param torch_threads: torch's intra-op threads while the experiments run (None: torch's
        default, one per core).
    """
    return (
        DQNExperimentBuilder(
            EnvFactoryRegistered(task=task, venv_type=VectorEnvType.DUMMY),
            ExperimentConfig(
                seed=seed,
                persistence_base_dir=persistence_base_dir,
                persistence_enabled=persistence_enabled,
                watch=watch,
                watch_render=watch_render,
                watch_num_episodes=watch_num_episodes,
                policy_restore_directory=restore_directory_of(resume_path),
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
            ),
        )
        .with_dqn_params(
            DQNParams(
                lr=lr,
                gamma=gamma,
                n_step_return_horizon=n_step_return_horizon,
                target_update_freq=target_update_freq,
                eps_training=eps_train,
                eps_inference=eps_test,
            )
        )
        .with_model_factory_default(hidden_sizes=hidden_sizes)
        .with_epoch_stop_callback(EpochStopCallbackRewardThreshold(reward_threshold))
        .build_and_run(num_experiments, experiment_launcher)
    )


if __name__ == "__main__":
    run_cli(main)
