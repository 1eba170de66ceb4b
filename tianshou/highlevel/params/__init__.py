"""Parameter objects of the high-level API and the factories they are turned into."""
