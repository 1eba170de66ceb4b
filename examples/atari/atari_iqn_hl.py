"""IQN (implicit quantile networks) on an Atari game through the high-level API.

The same algorithm and published hyper-parameters as ``atari_iqn.py`` (see there), declared with
an experiment builder.

    python -m examples.atari.atari_iqn_hl --task PongNoFrameskip-v4
"""

from collections.abc import Sequence

from tianshou.data import InfoStats
from tianshou.env.atari.atari_network import IntermediateModuleFactoryAtariDQN
from tianshou.env.atari.atari_wrapper import AtariEnvFactory, AtariEpochStopCallback
from tianshou.evaluation.launcher import RegisteredExpLauncher
from tianshou.highlevel.cli import run_cli, script_experiment_config
from tianshou.highlevel.config import OffPolicyTrainingConfig
from tianshou.highlevel.experiment import ExperimentResult, IQNExperimentBuilder
from tianshou.highlevel.params.algorithm_params import IQNParams
from tianshou.highlevel.trainer import (
    EpochTestCallbackDQNSetEps,
    EpochTrainCallbackDQNEpsLinearDecay,
)
from tianshou.utils.torch_utils import DEFAULT_TORCH_THREADS


def main(
    task: str = "PongNoFrameskip-v4",
    persistence_base_dir: str = "log",
    num_experiments: int = 1,
    experiment_launcher: RegisteredExpLauncher = RegisteredExpLauncher.SEQUENTIAL,
    seed: int = 0,
    watch: bool = False,
    resume_path: str | None = None,
    scale_obs: bool = False,
    eps_test: float = 0.005,
    eps_train: float = 1.0,
    eps_train_final: float = 0.05,
    buffer_size: int = 100000,
    lr: float = 1e-4,
    gamma: float = 0.99,
    n_step_return_horizon: int = 3,
    target_update_freq: int = 500,
    epoch: int = 100,
    epoch_num_steps: int = 100000,
    collection_step_num_env_steps: int = 10,
    update_step_num_gradient_steps_per_sample: float = 0.1,
    batch_size: int = 32,
    num_training_envs: int = 10,
    num_test_envs: int = 10,
    frames_stack: int = 4,
    sample_size: int = 32,
    online_sample_size: int = 8,
    target_sample_size: int = 8,
    num_cosines: int = 64,
    hidden_sizes: Sequence[int] = (512,),
    torch_threads: int | None = DEFAULT_TORCH_THREADS,
) -> ExperimentResult | list[InfoStats | None]:
    """Train IQN on the Atari game ``task`` and return the experiment's result.

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
    :param eps_train: exploration rate at the start; it decays linearly to ``eps_train_final``
        over the first 1M env steps.
    :param n_step_return_horizon: n-step return horizon.
    :param sample_size: quantile fractions sampled to act.
    :param online_sample_size: fractions of the online quantiles in the loss.
    :param target_sample_size: fractions of the target quantiles in the loss.
    :param num_cosines: cosines embedding each fraction.
    :param hidden_sizes: hidden layers of the quantile head.
    :param torch_threads: torch's intra-op threads while the experiments run (None: torch's
        default, one per core).
    """
    return (
        IQNExperimentBuilder(
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
        .with_iqn_params(
            IQNParams(
                gamma=gamma,
                n_step_return_horizon=n_step_return_horizon,
                lr=lr,
                target_update_freq=target_update_freq,
                sample_size=sample_size,
                online_sample_size=online_sample_size,
                target_sample_size=target_sample_size,
                num_cosines=num_cosines,
                hidden_sizes=hidden_sizes,
            )
        )
        .with_preprocess_network_factory(IntermediateModuleFactoryAtariDQN(features_only=True))
        .with_epoch_train_callback(EpochTrainCallbackDQNEpsLinearDecay(eps_train, eps_train_final))
        .with_epoch_test_callback(EpochTestCallbackDQNSetEps(eps_test))
        .with_epoch_stop_callback(AtariEpochStopCallback(task))
        .build_and_run(num_experiments, experiment_launcher)
    )


if __name__ == "__main__":
    run_cli(main, data_parallel=True)
