"""Seed-robust hyper-parameter search with Optuna on the high-level API.

Each trial runs its configuration on several seeds and is scored by the interquartile mean of
the final test returns; per-epoch scores let a pruner stop weak trials; studies live in Optuna
storage shared by processes; the top configurations are re-run on fresh seeds and ranked again;
the chosen configuration is saved as JSON that the ``*_hl.py`` scripts and the builders load.
See ``docs/hpo.md``. Needs the ``hpo`` extra (Optuna), which is imported only when used.

The modules, in the order a search uses them: :mod:`.space` (what is searched),
:mod:`.default_spaces`, :mod:`.binding` (how values configure a builder),
:mod:`.experiment_template`, :mod:`.seed_runs`, :mod:`.score`, :mod:`.objective`,
:mod:`.storage`, :mod:`.reevaluation`, :mod:`.best_config`, :mod:`.report`, :mod:`.search`.
"""
