"""Multi-agent learning: several agents, each with its own policy and algorithm."""
