"""Seed-robust search of SAC's hyper-parameters on Pendulum-v1 (the default SAC space, with
its conditional choice of a learned or a fixed entropy coefficient).

Every trial trains on ``--seeds`` seeds and is scored by the IQM of their final test returns;
the best ``--top-k`` configurations are re-run on fresh seeds, and ``OUT/study.json``,
``OUT/best_config.json`` and the plots are written.

    python -m examples.hpo.sac_pendulum_hpo --n-trials 30 --seeds 3 --storage hpo.db --out hpo_sac

Several processes with the same ``--storage`` share the study; run the command again to resume.
The best configuration then trains with ``--config-file OUT/best_config.json`` of a ``*_hl.py``
script.
"""

from tianshou.evaluation.launcher import RegisteredExpLauncher
from tianshou.highlevel.cli import run_cli
from tianshou.highlevel.config import OffPolicyTrainingConfig
from tianshou.highlevel.env import EnvFactoryRegistered, VectorEnvType
from tianshou.highlevel.experiment import ExperimentConfig
from tianshou.highlevel.hpo.binding import SAC_BINDING
from tianshou.highlevel.hpo.default_spaces import sac_search_space
from tianshou.highlevel.hpo.experiment_template import ExperimentTemplate
from tianshou.highlevel.hpo.search import SearchResult
from tianshou.scripts.hpo import search_and_report


def main(
    n_trials: int = 20,
    seeds: int = 3,
    storage: str | None = None,
    n_jobs: int = 1,
    timeout: float | None = None,
    out: str = "log/hpo/sac_pendulum",
    study_name: str = "sac_pendulum",
    pruner: str = "median",
    launcher: RegisteredExpLauncher = RegisteredExpLauncher.SEQUENTIAL,
    top_k: int = 3,
    reevaluation_seeds: int = 5,
    seed: int = 0,
    epoch: int = 5,
    epoch_num_steps: int = 3000,
    num_training_envs: int = 1,
    num_test_envs: int = 5,
    sampler_seed: int = 0,
) -> SearchResult:
    """Search SAC's hyper-parameters on Pendulum-v1 with several seeds per trial.

    :param n_trials: finished trials the study should hold (a resumed study adds the missing).
    :param seeds: seeds per trial.
    :param storage: the study's storage: an SQLite file (``.db``), a journal file (``.log``) or
        an SQLAlchemy URL; None: in memory.
    :param n_jobs: trials at once in threads of this process.
    :param timeout: stop starting trials after this many seconds.
    :param out: where study.json, best_config.json and the plots go.
    :param pruner: ``median``, ``halving`` or ``none``.
    :param launcher: runs a trial's seeds: ``SEQUENTIAL`` (lockstep, prunable per epoch),
        ``JOBLIB`` or ``RAY`` (in parallel).
    :param top_k: configurations re-run on fresh seeds.
    :param reevaluation_seeds: fresh seeds per re-run configuration.
    :param seed: the first search seed.
    :param epoch: epochs per run (a trial reports after each).
    :param sampler_seed: seeds the sampler: the same command proposes the same trials (give
        each process sharing a ``--storage`` its own).
    """
    template = ExperimentTemplate(
        binding=SAC_BINDING,
        env_factory=EnvFactoryRegistered(task="Pendulum-v1", venv_type=VectorEnvType.DUMMY),
        experiment_config=ExperimentConfig(seed=seed, persistence_enabled=False, device="cpu"),
        training_config=OffPolicyTrainingConfig(
            max_epochs=epoch,
            epoch_num_steps=epoch_num_steps,
            num_training_envs=num_training_envs,
            num_test_envs=num_test_envs,
            collection_step_num_env_steps=num_training_envs,
            buffer_size=epoch * epoch_num_steps,
            start_timesteps=min(1000, epoch_num_steps),
            start_timesteps_random=True,
        ),
    )
    return search_and_report(
        template,
        sac_search_space(),
        study_name,
        n_trials,
        seeds,
        storage,
        n_jobs,
        timeout,
        out,
        pruner,
        launcher,
        top_k,
        reevaluation_seeds,
        sampler_seed=sampler_seed,
    )


if __name__ == "__main__":
    run_cli(main)
