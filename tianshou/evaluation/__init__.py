"""Running experiment collections and evaluating them across seeds.

:mod:`tianshou.evaluation.launcher` runs several experiments (sequentially, with joblib or with
Ray, the latter through :mod:`tianshou.evaluation.ray_tasks`);
:mod:`tianshou.evaluation.rliable_evaluation` reads the logs of the seeded runs back and computes
robust aggregate statistics (interquartile mean, performance profiles) with
:mod:`tianshou.evaluation.interval_estimates`, which holds them, on ``rliable``. They need the
``eval`` extra. :mod:`tianshou.evaluation.video` watches a policy in a window or
records one of its episodes as a video. Nothing is imported here so that each loads only what it
needs.
"""
