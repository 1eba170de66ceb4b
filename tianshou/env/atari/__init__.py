"""Atari (Arcade Learning Environment) helpers: DeepMind-style wrappers and the Atari networks.

Import the modules themselves, ``tianshou.env.atari.atari_wrapper`` and
``tianshou.env.atari.atari_network``; this package re-exports nothing, so that importing
:mod:`tianshou.env` does not need the ``atari`` extra (``ale-py``, ``opencv-python-headless``).
"""
