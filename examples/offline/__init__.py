"""Offline RL scripts: learning from Minari datasets of MuJoCo tasks."""
