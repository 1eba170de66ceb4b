"""The example scripts, one package per family of tasks.

Each script runs three ways: as a file from any folder (``python examples/mujoco/mujoco_sac.py``),
from its own folder (``cd examples/mujoco && python mujoco_sac.py``) or as a module from the
repository root (``python -m examples.mujoco.mujoco_sac``). That works because a script imports
only from the installed ``tianshou`` package (its shared helpers live in :mod:`tianshou.scripts`,
:mod:`tianshou.utils.cli` and :mod:`tianshou.highlevel.cli`) and never from this package.
Importing any module here changes no process-wide setting; a script's ``main`` does what it
needs (thread counts, logging, off-screen rendering).
"""
