"""Fixtures for tests of the verl-aware layer: verl's composed config and a local Ray + TransferQueue."""

import os

import pytest
import verl
from hydra import compose, initialize_config_dir

VERL_CONFIG_DIR = os.path.join(os.path.dirname(verl.__file__), "trainer", "config")


@pytest.fixture
def verl_config():
    """Compose verl's own ``ppo_trainer`` config with overrides, as ``main_ppo`` would."""

    def _compose(overrides=(), config_name="ppo_trainer"):
        with initialize_config_dir(config_dir=VERL_CONFIG_DIR, version_base=None):
            return compose(config_name=config_name, overrides=list(overrides))

    return _compose


@pytest.fixture(scope="module")
def transfer_queue():
    """A local Ray instance with verl's TransferQueue, as the V1 trainer's TaskRunner has."""
    import ray
    import transfer_queue as tq
    from omegaconf import OmegaConf

    # The controller and storage unit each hold a CPU slot; 2 physical cores are enough.
    ray.init(num_cpus=4, include_dashboard=False, log_to_driver=False, configure_logging=False)
    tq.init(OmegaConf.create({"backend": {"SimpleStorage": {"num_data_storage_units": 1}}}))
    try:
        yield tq
    finally:
        tq.close()
        ray.shutdown()
