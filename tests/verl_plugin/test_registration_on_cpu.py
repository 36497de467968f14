"""The plugin registers through verl's entry point, and a missing registration is loud."""

import json
import subprocess
import sys

import pytest
from verl.trainer.ppo import core_algos
from verl.trainer.ppo.v1 import trainer_base

from pearl_verl.verl_plugin import register
from pearl_verl.verl_plugin.adv_estimator import compute_pearl_outcome_advantage
from pearl_verl.verl_plugin.pearl_sync import PearlSyncTrainer


def _fresh_python(code: str, **env: str) -> subprocess.CompletedProcess:
    import os

    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env={**os.environ, **env}
    )


def test_import_verl_alone_registers_everything_in_a_fresh_process():
    # Nothing of ours is imported explicitly: verl's entry-point discovery must do it.
    code = (
        "import json, verl\n"
        "from verl.trainer.ppo.core_algos import get_adv_estimator_fn\n"
        "from verl.trainer.ppo.v1 import get_trainer_cls\n"
        "from verl.experimental.agent_loop.agent_loop import _agent_loop_registry\n"
        "fn = get_adv_estimator_fn('pearl'); cls = get_trainer_cls('pearl_sync')\n"
        "print(json.dumps([fn.__module__ + '.' + fn.__name__, cls.__module__ + '.' + cls.__name__,\n"
        "                  _agent_loop_registry['pearl_tutor']['_target_']]))\n"
    )
    proc = _fresh_python(code)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == [
        "pearl_verl.verl_plugin.adv_estimator.compute_pearl_outcome_advantage",
        "pearl_verl.verl_plugin.pearl_sync.PearlSyncTrainer",
        "pearl_verl.verl_plugin.agent_loop.PearlTutorAgentLoop",
    ]


def test_plugin_policy_none_disables_it():
    code = "import verl\nfrom verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY\nprint('pearl' in ADV_ESTIMATOR_REGISTRY)"
    proc = _fresh_python(code, VERL_USE_EXTERNAL_PLUGINS="none")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1] == "False"


def test_registered_objects_are_ours():
    assert core_algos.get_adv_estimator_fn("pearl") is compute_pearl_outcome_advantage
    assert trainer_base.get_trainer_cls("pearl_sync") is PearlSyncTrainer
    register.check_registered()
    assert register.missing_registrations() == []


def test_check_registered_lists_what_is_missing(monkeypatch):
    monkeypatch.delitem(core_algos.ADV_ESTIMATOR_REGISTRY, "pearl")
    with pytest.raises(RuntimeError, match=r"missing advantage estimator 'pearl'.*pearl-verl doctor"):
        register.check_registered()


def test_check_registered_notices_an_overwrite(monkeypatch):
    monkeypatch.setitem(trainer_base.TRAINER_REGISTRY, "pearl_sync", trainer_base.get_trainer_cls("sync"))
    with pytest.raises(RuntimeError, match=r"V1 trainer mode 'pearl_sync'"):
        register.check_registered()
    assert [reg.name for reg in register.missing_registrations()] == ["pearl_sync"]
