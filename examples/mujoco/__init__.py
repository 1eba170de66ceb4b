"""MuJoCo scripts: continuous control on gymnasium's ``-v5`` tasks, procedural and high-level."""
