"""PEARL's verl settings, written once as Hydra configs on top of verl's own ``ppo_trainer`` and ``sft_trainer_engine``.

Every PEARL run reads them: the cluster recipes, the CPU recipe and ``pearl-verl train-local``
pass ``--config-path=pkg://pearl_verl.verl_plugin.config --config-name=NAME`` to main_ppo or to verl's
SFT trainer, and the tests compose the same files. What a run sets on its command line is what differs between runs:
sizes, learning rate, engine, endpoints, paths.

- ``pearl_adv_gspo``: the paper's GSPO with the PEARL estimator; all that the estimator-only
  recipe adds to a single-reward verl setup.
- ``pearl_gspo``: the method (paper §3.3): the above, with the ``pearl_tutor`` agent loop, the
  ``pearl_judge`` reward and the ``pearl_sync`` trainer mode.
- ``pearl_gspo_cpu``: the method on a host CPU (verl's platform ``cpu``): engine precision,
  attention and the few workers a 2-core machine has room for.
- ``pearl_sft``: verl's SFT trainer as the tutor's cold start and the judge's finetune use it (the chat
  column, AdamW at a constant rate, the Hugging Face export); ``pearl_sft_cpu``: the same on a host CPU.

YAML rather than Python or bash: it is how verl ships its own settings and recipes, a user reads it
without running anything, and ``--cfg job`` shows where each value comes from.
"""

CONFIG_MODULE = "pearl_verl.verl_plugin.config"
PEARL_ADV_GSPO = "pearl_adv_gspo"
PEARL_GSPO = "pearl_gspo"
PEARL_GSPO_CPU = "pearl_gspo_cpu"
PEARL_SFT = "pearl_sft"
PEARL_SFT_CPU = "pearl_sft_cpu"
CONFIG_NAMES = (PEARL_ADV_GSPO, PEARL_GSPO, PEARL_GSPO_CPU, PEARL_SFT, PEARL_SFT_CPU)


def _known(name: str) -> str:
    if name not in CONFIG_NAMES:
        raise ValueError(f"unknown PEARL config {name!r}; one of {', '.join(CONFIG_NAMES)}")
    return name


def config_flags(name: str) -> list[str]:
    """The Hydra command-line flags that make a main_ppo (ours or verl's) or verl's SFT trainer start from ``name``."""
    return [f"--config-path=pkg://{CONFIG_MODULE}", f"--config-name={_known(name)}"]


def compose_config(name: str, overrides: list[str]):
    """The config a trainer runs with ``config_flags(name) + overrides`` (Hydra's compose, no run).

    verl's own configs are read as the files that ``pkg://verl.trainer.config`` names, so composing imports
    neither verl nor torch (0.4 s against 8 s): ``pearl-verl plan`` and ``doctor`` read a recipe this way.
    """
    from hydra import compose, initialize_config_module

    searchpath = f"hydra.searchpath=['file://{verl_config_dir()}']"
    with initialize_config_module(config_module=CONFIG_MODULE, version_base=None):
        return compose(config_name=_known(name), overrides=[searchpath, *overrides])


def verl_config_dir() -> str:
    """The folder of verl's ``ppo_trainer.yaml`` and the rest of ``verl.trainer.config``, found without importing verl."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("verl")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("verl is not installed: pip install -e . installs the version pearl_verl runs on")
    return str(Path(spec.submodule_search_locations[0]) / "trainer" / "config")
