"""What the procedural Atari scripts (``examples/atari/atari_<algo>.py``) share: their command
line (:mod:`~tianshou.scripts.atari.cli`), environments (:mod:`~tianshou.scripts.atari.envs`),
frame buffers (:mod:`~tianshou.scripts.atari.buffers`), curiosity module
(:mod:`~tianshou.scripts.atari.icm`) and run (:mod:`~tianshou.scripts.atari.training`)."""
