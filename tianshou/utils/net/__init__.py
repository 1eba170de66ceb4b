"""Torch networks for actors and critics: MLP bodies, heads for continuous and discrete actions."""
