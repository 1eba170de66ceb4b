"""The framework of the example scripts (``examples/``): their command lines, environments,
training loops, saving and resuming, and the summary each prints when it ends.

It lives in the installed package so that every script imports only from ``tianshou`` and runs
the same way from any folder: ``python examples/mujoco/mujoco_sac.py``, ``cd examples/mujoco &&
python mujoco_sac.py`` or ``python -m examples.mujoco.mujoco_sac`` from the repository root. A
script of your own can reuse it too.

One module per concern: :mod:`~tianshou.scripts.summary` (what a run reports),
:mod:`~tianshou.scripts.persistence` (saving and restoring a run), and one module or package per
family of scripts (:mod:`~tianshou.scripts.mujoco`, :mod:`~tianshou.scripts.atari`,
:mod:`~tianshou.scripts.offline`, :mod:`~tianshou.scripts.pomdp`, :mod:`~tianshou.scripts.hpo`,
:mod:`~tianshou.scripts.pistonball`). Nothing is imported here, so that each loads only what it
needs.
"""
