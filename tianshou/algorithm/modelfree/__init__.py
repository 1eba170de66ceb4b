"""Model-free algorithms: policy-gradient, actor-critic and value-based methods."""
