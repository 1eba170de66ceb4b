"""Loading Optuna only when a search runs, so that ``import tianshou`` (and the rest of the
high-level API) never depends on it."""

from types import ModuleType

from tianshou.utils.optional_dependency import install_hint


def import_optuna() -> ModuleType:
    """The ``optuna`` module.

    :raises ImportError: naming the ``hpo`` extra, if Optuna is not installed.
    """
    try:
        import optuna
    except ImportError as error:
        raise ImportError(f"tianshou.highlevel.hpo needs Optuna; {install_hint('hpo')}") from error
    return optuna
