"""The MuJoCo benchmark campaign: algorithms x tasks x seeds, each run one ``examples/mujoco``
script with its published defaults, launched locally or on a Ray cluster, reported with rliable.

The modules, in the order a campaign uses them:

* :mod:`benchmark.campaign.plan`: what a run is (:class:`~benchmark.campaign.plan.RunSpec`),
  where it writes, and the script command line that realises it.
* :mod:`benchmark.campaign.execute`: one run in the current process, and its ``result.json``.
* :mod:`benchmark.campaign.worker`: the subprocess entry point of the local launcher.
* :mod:`benchmark.campaign.launch_local` and :mod:`benchmark.campaign.launch_ray`: running many
  runs at once, on this machine or on a Ray cluster.
* :mod:`benchmark.campaign.statistics`: the statistics over seeds that the report's table and
  figures share.
* :mod:`benchmark.campaign.report` and :mod:`benchmark.campaign.plots`: ``summary.json``,
  ``table.md`` and the figures, from the ``result.json`` files.

The command line is :mod:`benchmark.run_benchmark`.
"""
