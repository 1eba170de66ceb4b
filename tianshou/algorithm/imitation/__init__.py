"""Offline RL and imitation learning: algorithms that learn from demonstrations."""
