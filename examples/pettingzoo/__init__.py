"""Multi-agent scripts on PettingZoo games."""
