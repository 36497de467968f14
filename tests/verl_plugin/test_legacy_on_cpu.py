"""The legacy-trainer opt-in: verl's ``compute_advantage`` forwards judge fields inside the hook."""

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf
from verl.protocol import DataProto
from verl.trainer.ppo import ray_trainer

from pearl_verl.advantage.estimator import compute_pearl_advantage
from pearl_verl.dims import DIMENSIONS
from pearl_verl.verl_plugin import legacy
from pearl_verl.verl_plugin.main_ppo import PearlLegacyTaskRunner

SCORES = np.array(
    [[0.9] * 8, [0.5] * 8, [0.3] * 8, [0.7] * 8, [0.7] * 8, [0.1] * 8],
    dtype=np.float64,
)


def _legacy_batch():
    """Shaped like the legacy trainer's batch: reward_extra_info keys are non_tensor_batch columns."""
    mask = torch.tensor([[1, 1, 0, 1]] * 6)
    non_tensors = {"uid": np.array(["a", "a", "a", "b", "b", "b"], dtype=object)}
    for k, dim in enumerate(DIMENSIONS):
        column = SCORES[:, k].astype(object)
        column[2] = None  # the judge failed on sample 2
        non_tensors[dim] = column
    non_tensors["judge_ok"] = np.array([1, 1, 0, 1, 1, 1])
    non_tensors["completed"] = np.array([1, 1, 1, 1, 0, 1])
    non_tensors["tutor_turns"] = np.array([3, 6, 2, 4, 15, 4])
    return DataProto.from_dict(
        tensors={"token_level_rewards": torch.zeros(6, 4), "response_mask": mask}, non_tensors=non_tensors
    )


def _root(adv_estimator="pearl"):
    return OmegaConf.create({"algorithm": {"adv_estimator": adv_estimator}, "pearl": {"advantage": {"gamma": 0.9}}})


def test_hook_forwards_judge_fields_and_metrics():
    root = _root()
    with legacy.legacy_advantage_hook():
        data = ray_trainer.compute_advantage(_legacy_batch(), adv_estimator="pearl", config=root.algorithm)
    want = compute_pearl_advantage(
        torch.from_numpy(np.where(np.arange(6)[:, None] == 2, np.nan, SCORES)),
        [3, 6, 2, 4, 15, 4], [True, True, True, True, False, True], ["a", "a", "a", "b", "b", "b"],
        gamma=0.9, valid=[True, True, False, True, True, True],
    )
    torch.testing.assert_close(data.batch["advantages"], want.unsqueeze(1) * data.batch["response_mask"])
    assert data.batch["advantages"][2].abs().sum() == 0
    assert data.meta_info[legacy.METRICS_META_KEY]["pearl/judge/failure_rate"] == pytest.approx(1 / 6)


def test_metrics_wrapper_merges_the_advantage_metrics():
    calls = []

    def fake_data_metrics(batch, use_critic=True):
        calls.append(use_critic)
        return {"critic/score/mean": 1.0}

    batch = _legacy_batch()
    batch.meta_info[legacy.METRICS_META_KEY] = {"pearl/judge/failure_rate": 0.25}
    merged = legacy.pearl_data_metrics(fake_data_metrics)(batch, use_critic=False)
    assert merged == {"critic/score/mean": 1.0, "pearl/judge/failure_rate": 0.25} and calls == [False]


def test_other_estimators_go_to_verls_original():
    root = _root("grpo")
    batch = _legacy_batch()
    batch.batch["token_level_rewards"][:, -1] = torch.tensor([1.0, 0.0, 0.0, 1.0, 1.0, 0.0])
    with legacy.legacy_advantage_hook():
        out = ray_trainer.compute_advantage(batch, adv_estimator="grpo", config=root.algorithm)
    assert legacy.METRICS_META_KEY not in out.meta_info
    assert out.batch["advantages"][0, 0] > 0 and out.batch["advantages"][1, 0] < 0


def test_hook_restores_verls_functions_even_on_error():
    original = ray_trainer.compute_advantage, ray_trainer.compute_data_metrics
    with pytest.raises(RuntimeError, match="boom"):
        with legacy.legacy_advantage_hook():
            assert ray_trainer.compute_advantage is not original[0]
            raise RuntimeError("boom")
    assert (ray_trainer.compute_advantage, ray_trainer.compute_data_metrics) == original


def test_legacy_task_runner_runs_verls_trainer_inside_the_hook(monkeypatch):
    seen = {}

    def fake_run(self, config):
        seen["wrapped"] = hasattr(ray_trainer.compute_advantage, "__wrapped__")
        seen["config"] = config

    monkeypatch.setattr(PearlLegacyTaskRunner.__mro__[1], "run", fake_run)
    original = ray_trainer.compute_advantage
    PearlLegacyTaskRunner.run(object.__new__(PearlLegacyTaskRunner), "cfg")
    assert seen == {"wrapped": True, "config": "cfg"}
    assert ray_trainer.compute_advantage is original


def test_hook_stops_after_the_kth_failing_steps_update_with_that_step_saved(monkeypatch):
    from pearl_verl.advantage.failure_guard import TrainingStalled

    updated, saved = [], []
    monkeypatch.setattr(ray_trainer.RayPPOTrainer, "_update_actor", lambda self, _: updated.append(self.global_steps))
    monkeypatch.setattr(ray_trainer.RayPPOTrainer, "_save_checkpoint", lambda self: saved.append(self.global_steps))
    trainer = object.__new__(ray_trainer.RayPPOTrainer)  # only what the stop reads: no workers on CPU
    trainer.config = OmegaConf.create({"trainer": {"default_local_dir": "/ckpt"}})
    guard = {"max_failure_rate": 0.1, "patience": 2}
    root = OmegaConf.create({"algorithm": {"adv_estimator": "pearl"}, "pearl": {"failure_guard": guard},
                             "reward": {"reward_kwargs": {"base_url": "http://judge-host:8000/v1"}}})
    batch = _legacy_batch()  # one sample in 6 failed, in the judge: 0.17 > 0.1 at every step
    batch.non_tensor_batch["pearl_end_reason"] = np.array(["tutor_ended"] * 6, dtype=object)
    batch.non_tensor_batch["pearl_student_replies"] = np.array([4] * 6, dtype=object)
    batch.non_tensor_batch["pearl_student_fallbacks"] = np.array([0, 1, 0, 0, 2, 0], dtype=object)
    batch.non_tensor_batch["judge_replies"] = np.array([1, 2, 3, 1, 1, 1])
    batch.non_tensor_batch["judge_unparsed"] = np.array([0, 1, 3, 0, 0, 0])
    original = ray_trainer.RayPPOTrainer._update_actor
    with legacy.legacy_advantage_hook():
        for step in (1, 2):  # verl's legacy fit: advantage, then the actor update
            trainer.global_steps = step
            data = ray_trainer.compute_advantage(batch, adv_estimator="pearl", config=root.algorithm)
            if step == 2:
                with pytest.raises(TrainingStalled) as stop:
                    ray_trainer.RayPPOTrainer._update_actor(trainer, data)
            else:
                ray_trainer.RayPPOTrainer._update_actor(trainer, data)
    assert ray_trainer.RayPPOTrainer._update_actor is original
    message = str(stop.value)
    assert "2 consecutive steps (the last 2 steps: 0.17, 0.17)" in message
    assert "What failed, as a mean share of dialogues over these steps: the judge endpoint" in message
    assert "reward.reward_kwargs.base_url=http://judge-host:8000/v1" in message  # as pearl_sync's stop names it
    assert "Step 2 (its update done) is saved in /ckpt/global_step_2." in message
    assert updated == [1, 2] and saved == [2]
    assert data.meta_info[legacy.METRICS_META_KEY]["pearl/failure/judge_rate"] == pytest.approx(1 / 6)
    assert data.meta_info[legacy.METRICS_META_KEY]["pearl/student/fallback_rate"] == pytest.approx(3 / 24)
    assert data.meta_info[legacy.METRICS_META_KEY]["pearl/judge/parse_failure_rate"] == pytest.approx(4 / 9)


def test_both_trainers_set_up_their_failure_guard_in_one_place():
    """The legacy hook and ``pearl_sync`` build their guard from the same root config by the same function."""
    from pearl_verl.verl_plugin import pearl_sync, stall

    assert legacy.failure_guard is pearl_sync.failure_guard is stall.failure_guard
    root = OmegaConf.create({"pearl": {"student": {"backend": "llm", "base_url": "http://student:8000/v1",
                                                   "model": "s"}, "failure_guard": {"patience": 4}},
                             "reward": {"reward_kwargs": {"base_url": "http://judge:8000/v1"}}})
    guard = stall.failure_guard(root)
    assert guard.config.patience == 4
    assert "base_url=http://judge:8000/v1" in guard.causes["judge"]
    assert "base_url=http://student:8000/v1" in guard.causes["student"]
