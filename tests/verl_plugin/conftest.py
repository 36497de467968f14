"""Fixtures for tests of the verl-aware layer: verl's composed config, a local Ray + TransferQueue,
and whole runs of verl's trainer watched for progress rather than timed."""

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

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


STALL_S = 900
"""A run that prints nothing for this long hangs. A run prints a line every few seconds (Ray, verl's
console logger) on an idle machine; the bound is on silence, never on a run's length, so a busy
machine makes runs slower, not failed."""


class WatchedRun:
    """A process in its own session whose stdout and stderr are read as they come.

    ``wait()`` returns when it exits, or kills its whole session (Ray's processes included) and fails
    when it has printed nothing for :data:`STALL_S`.
    """

    def __init__(self, argv, env):
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                                     start_new_session=True)
        self.last_output = time.monotonic()
        self._chunks = {"stdout": [], "stderr": []}
        self._readers = [threading.Thread(target=self._read, args=(name,), daemon=True) for name in self._chunks]
        for reader in self._readers:
            reader.start()

    def _read(self, name):
        for line in getattr(self.proc, name):
            self._chunks[name].append(line)
            self.last_output = time.monotonic()

    def stalled(self) -> bool:
        return self.proc.poll() is None and time.monotonic() - self.last_output > STALL_S

    def kill(self) -> None:
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def wait(self) -> subprocess.CompletedProcess:
        while self.proc.poll() is None:
            if self.stalled():
                self.kill()
                raise AssertionError(f"no output for {STALL_S} s: the run hangs\n{self.output()[-4000:]}")
            time.sleep(1)
        for reader in self._readers:
            reader.join()
        return subprocess.CompletedProcess(self.proc.args, self.proc.returncode, "".join(self._chunks["stdout"]),
                                           "".join(self._chunks["stderr"]))

    def output(self) -> str:
        return "".join(self._chunks["stdout"]) + "".join(self._chunks["stderr"])


@pytest.fixture
def watched_run():
    """Start a :class:`WatchedRun`; any still running when the test ends are killed."""
    runs = []

    def _start(argv, env):
        runs.append(WatchedRun(argv, env))
        return runs[-1]

    yield _start
    for run in runs:
        if run.proc.poll() is None:
            run.kill()


@pytest.fixture
def sft_command():
    """``sft_command(recipe, *args, **env)``: (launcher arguments, Hydra overrides) an SFT recipe's ``--dry-run``
    prints, after checking that it runs verl's SFT trainer from the ``pearl_sft`` config."""
    from pearl_verl.verl_plugin.config import PEARL_SFT, config_flags

    def _command(recipe: Path, *args: str, **env: str) -> tuple[list[str], list[str]]:
        proc = subprocess.run(["bash", str(recipe), "--dry-run", *args], capture_output=True, text=True, check=True,
                              env={**os.environ, **env})
        command = proc.stdout.splitlines()
        split = command.index("-m")
        assert command[0] == "torchrun" and command[split + 1] == "verl.trainer.sft_trainer"
        assert command[split + 2 : split + 4] == config_flags(PEARL_SFT)
        return command[:split], command[split + 4 :]

    return _command
