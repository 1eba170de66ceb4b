"""Tests of tianshou.algorithm.modelfree."""
