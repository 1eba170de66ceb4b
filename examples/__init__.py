"""The example scripts, one package per family of tasks.

Run a script as a module from the repository root, e.g.
``python -m examples.mujoco.mujoco_sac --task Hopper-v5``. The scripts import their helpers
through this package (``from examples.mujoco.mujoco_env import make_mujoco_env``), so they
need the repository root on the module search path, which ``python -m`` from there provides.
Importing any module here changes no process-wide setting; a script's ``main`` does what it
needs (thread counts, logging, off-screen rendering).
"""
