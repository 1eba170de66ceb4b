"""Proximal Policy Optimisation on an Atari game through the high-level API.

The same algorithm and published hyper-parameters as ``atari_ppo.py`` (see there), declared with
an experiment builder; ``--icm-lr-scale`` > 0 adds an intrinsic curiosity module.

    python -m examples.atari.atari_ppo_hl --task PongNoFrameskip-v4
"""

from tianshou.data import InfoStats
from tianshou.env.atari.atari_network import (
    ActorFactoryAtariDQN,
    IntermediateModuleFactoryAtariDQNFeatures,
)
from tianshou.env.atari.atari_wrapper import AtariEnvFactory, AtariEpochStopCallback
from tianshou.evaluation.launcher import RegisteredExpLauncher
from tianshou.highlevel.cli import run_cli, script_experiment_config
from tianshou.highlevel.config import OnPolicyTrainingConfig
from tianshou.highlevel.experiment import ExperimentResult, PPOExperimentBuilder
from tianshou.highlevel.params.algorithm_params import PPOParams
from tianshou.highlevel.params.algorithm_wrapper import AlgorithmWrapperFactoryIntrinsicCuriosity
from tianshou.highlevel.params.lr_scheduler import LRSchedulerFactoryFactoryLinear
from tianshou.highlevel.params.optim import OptimizerFactoryFactoryAdam
from tianshou.utils.torch_utils import DEFAULT_TORCH_THREADS


def main(
    task: str = "PongNoFrameskip-v4",
    persistence_base_dir: str = "log",
    num_experiments: int = 1,
    experiment_launcher: RegisteredExpLauncher = RegisteredExpLauncher.SEQUENTIAL,
    seed: int = 4213,
    watch: bool = False,
    resume_path: str | None = None,
    scale_obs: bool = True,
    buffer_size: int = 100000,
    lr: float = 2.5e-4,
    gamma: float = 0.99,
    epoch: int = 100,
    epoch_num_steps: int = 100000,
    collection_step_num_env_steps: int = 1000,
    update_step_num_repetitions: int = 4,
    batch_size: int = 256,
    hidden_size: int = 512,
    num_training_envs: int = 10,
    num_test_envs: int = 10,
    return_scaling: bool = False,
    vf_coef: float = 0.25,
    ent_coef: float = 0.01,
    gae_lambda: float = 0.95,
    lr_decay: bool = True,
    max_grad_norm: float = 0.5,
    eps_clip: float = 0.1,
    dual_clip: float | None = None,
    value_clip: bool = True,
    advantage_normalization: bool = True,
    recompute_advantage: bool = False,
    frames_stack: int = 4,
    icm_lr_scale: float = 0.0,
    icm_reward_scale: float = 0.01,
    icm_forward_loss_weight: float = 0.2,
    torch_threads: int | None = DEFAULT_TORCH_THREADS,
) -> ExperimentResult | list[InfoStats | None]:
    """Train PPO on the Atari game ``task`` and return the experiment's result.

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
    :param scale_obs: let the network divide the uint8 pixels by 255.
    :param hidden_size: width of the layer on the shared Nature-DQN torso (and of the ICM's).
    :param lr_decay: decay the learning rate linearly to 0 over the run.
    :param icm_lr_scale: > 0: add an intrinsic curiosity module, its loss scaled by this.
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
        replay_buffer_ignore_obs_next=True,
        replay_buffer_save_only_last_obs=True,
        replay_buffer_stack_num=frames_stack,
    )
    builder = (
        PPOExperimentBuilder(
            AtariEnvFactory(task, frames_stack, scale=False),
            script_experiment_config(
                persistence_base_dir=persistence_base_dir,
                seed=seed,
                watch=watch,
                resume_path=resume_path,
            ),
            training_config,
        )
        .with_ppo_params(
            PPOParams(
                gamma=gamma,
                gae_lambda=gae_lambda,
                return_scaling=return_scaling,
                ent_coef=ent_coef,
                vf_coef=vf_coef,
                max_grad_norm=max_grad_norm,
                value_clip=value_clip,
                advantage_normalization=advantage_normalization,
                eps_clip=eps_clip,
                dual_clip=dual_clip,
                recompute_advantage=recompute_advantage,
                optim=OptimizerFactoryFactoryAdam(eps=1e-5),
                lr=lr,
                lr_scheduler=LRSchedulerFactoryFactoryLinear(training_config) if lr_decay else None,
            )
        )
        .with_actor_factory(
            ActorFactoryAtariDQN(
                scale_obs=scale_obs, features_only=True, output_dim_added_layer=hidden_size
            )
        )
        .with_critic_factory_use_actor()
        .with_epoch_stop_callback(AtariEpochStopCallback(task))
    )
    if icm_lr_scale > 0:
        builder.with_algorithm_wrapper_factory(
            AlgorithmWrapperFactoryIntrinsicCuriosity(
                feature_net_factory=IntermediateModuleFactoryAtariDQNFeatures(),
                hidden_sizes=[hidden_size],
                lr=lr,
                lr_scale=icm_lr_scale,
                reward_scale=icm_reward_scale,
                forward_loss_weight=icm_forward_loss_weight,
            )
        )
    return builder.build_and_run(num_experiments, experiment_launcher)


if __name__ == "__main__":
    run_cli(main, data_parallel=True)
