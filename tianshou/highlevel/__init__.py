"""The high-level API: experiments declared from factories for envs, networks, loggers and
persistence, built on the same algorithms, collectors and trainers as the procedural API.

Nothing is imported here, so that ``import tianshou.highlevel.env`` loads only what it needs.
"""
