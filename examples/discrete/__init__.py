"""A discrete-action script of the high-level API: DQN on CartPole."""
