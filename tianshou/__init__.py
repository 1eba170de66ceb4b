"""Tianshou: a modular deep reinforcement learning library on PyTorch.

Layers, from the bottom up: ``tianshou.data`` (Batch, replay buffers) and ``tianshou.env``
(vectorised environments), with ``tianshou.spaces`` (legal-action masks, product distributions
over structured action spaces, dict observations) between Batch and the collectors;
``tianshou.algorithm`` (Policy and Algorithm) with the exploration noise of
``tianshou.exploration``; the trainers in ``tianshou.trainer``; helpers in ``tianshou.utils``.
"""

from tianshou import data, env, exploration, algorithm, trainer, utils  # noqa: I001  (layer order)

__version__ = "2.0.1"

__all__ = ["__version__", "algorithm", "data", "env", "exploration", "trainer", "utils"]
