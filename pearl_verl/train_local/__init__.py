"""``pearl-verl train-local``: cold start, then PEARL RL through verl's main_ppo on one machine, with held-out evaluations.

A launcher: it prepares the model and data, writes the run's settings as verl's Hydra overrides
(:mod:`~pearl_verl.train_local.verl_run`), starts and stops verl's trainer as a child, and reports.
What verl itself needs on a machine without a GPU is in :mod:`pearl_verl.verl_plugin.cpu`.
"""
