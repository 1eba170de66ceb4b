"""Exploration noise added to continuous actions while collecting training data."""

from tianshou.exploration.random import BaseNoise, GaussianNoise, OUNoise

__all__ = ["BaseNoise", "GaussianNoise", "OUNoise"]
