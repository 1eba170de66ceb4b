"""What the procedural MuJoCo scripts (``examples/mujoco/mujoco_<algo>.py``) share: their
command line (:mod:`~tianshou.scripts.mujoco.cli`), networks
(:mod:`~tianshou.scripts.mujoco.networks`), PPO setup (:mod:`~tianshou.scripts.mujoco.ppo`) and
run (:mod:`~tianshou.scripts.mujoco.training`)."""
