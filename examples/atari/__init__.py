"""Atari (ALE) scripts: DQN-family, PPO and discrete SAC on 84x84 frame stacks."""
