"""How many threads verl's FSDP engine computes on the host CPU: Ray gives each worker one unless told."""

import os
import sys

import pytest
import torch
from verl.workers.engine.fsdp.transformer_impl import FSDPEngineWithLMHead

from pearl_verl.train_local.local_config import LocalTrainConfig
from pearl_verl.train_local.verl_run import _run_verl
from pearl_verl.verl_plugin.cpu.engine import HostFSDPEngine
from pearl_verl.verl_plugin.cpu.threads import TRAIN_THREADS_ENV, train_threads


@pytest.fixture
def restore_threads():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_the_setting_is_read_as_a_count_and_a_bad_one_is_named(monkeypatch):
    monkeypatch.delenv(TRAIN_THREADS_ENV, raising=False)
    assert train_threads() is None
    monkeypatch.setenv(TRAIN_THREADS_ENV, " 3 ")
    assert train_threads() == 3
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv(TRAIN_THREADS_ENV, bad)
        with pytest.raises(ValueError, match=f"{TRAIN_THREADS_ENV}='{bad}'"):
            train_threads()


@pytest.mark.parametrize(("setting", "expected"), [("2", 2), (None, None)])
def test_the_engine_takes_the_threads_it_is_given_and_otherwise_keeps_the_processs(
        monkeypatch, restore_threads, setting, expected):
    monkeypatch.setattr(FSDPEngineWithLMHead, "__init__", lambda self, *a, **k: None)  # no model to build here
    torch.set_num_threads(1)  # as Ray starts a worker
    if setting is None:
        monkeypatch.delenv(TRAIN_THREADS_ENV, raising=False)
    else:
        monkeypatch.setenv(TRAIN_THREADS_ENV, setting)
    HostFSDPEngine()
    assert torch.get_num_threads() == (expected or 1)


def test_a_pretrained_model_trains_on_every_core_and_tiny_as_verls_launchers_leave_it():
    assert LocalTrainConfig(model="smollm2").engine_threads == len(os.sched_getaffinity(0))
    assert LocalTrainConfig().engine_threads is None
    cores = len(os.sched_getaffinity(0))
    assert LocalTrainConfig(train_threads=1).engine_threads == 1
    assert LocalTrainConfig(train_threads=10**9).engine_threads == cores  # more threads than cores only contend


@pytest.mark.parametrize(("threads", "seen"), [(2, "2"), (None, "unset")])
def test_verls_child_gets_the_thread_count_and_none_when_it_is_left_to_the_launcher(
        tmp_path, monkeypatch, threads, seen):
    monkeypatch.setenv(TRAIN_THREADS_ENV, "7")  # the parent's own is not passed on
    script = f"import os; print('threads', os.environ.get('{TRAIN_THREADS_ENV}', 'unset'))"
    with open(tmp_path / "log.txt", "w+", encoding="utf-8") as log:
        code, _ = _run_verl([sys.executable, "-c", script], metrics=tmp_path / "m.jsonl", log=log,
                            on_row=lambda row: None, threads=threads)
    assert code == 0
    assert f"threads {seen}\n" in (tmp_path / "log.txt").read_text(encoding="utf-8")
