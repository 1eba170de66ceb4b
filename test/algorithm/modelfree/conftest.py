"""Fixtures shared by the model-free algorithm tests."""

from test.algorithm.modelfree.cartpole_q_learning import one_thread

__all__ = ["one_thread"]
