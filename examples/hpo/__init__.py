"""Seed-robust hyper-parameter searches of high-level experiments (Optuna)."""
