"""The core layer: ``Policy`` (observation to action) and ``Algorithm`` (how a policy learns)."""

from tianshou.algorithm.algorithm_base import Policy

__all__ = ["Policy"]
