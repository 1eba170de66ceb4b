"""Factories for the torch modules of an experiment (actors, critics, intermediate networks)."""
