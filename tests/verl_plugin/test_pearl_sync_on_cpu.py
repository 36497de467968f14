"""The ``pearl_sync`` advantage step on V1-shaped data in a real TransferQueue.

Samples are written the way verl's ``AgentLoopWorkerTQ`` writes them (``AgentLoopOutput.as_dict()``
plus the dataset kwargs, keyed ``{uid}_{session}_{index}``), with the reward loop's
``reward_extra_info`` inside ``extra_fields``.
"""

import json

import numpy as np
import pytest
import torch
from transfer_queue import KVBatchMeta
from verl.experimental.agent_loop.agent_loop import AgentLoopMetrics, AgentLoopOutput
from verl.trainer.ppo import core_algos
from verl.utils.tensordict_utils import list_of_dict_to_tensordict

from pearl_verl.advantage.estimator import compute_pearl_advantage
from pearl_verl.dims import DIMENSIONS
from pearl_verl.verl_plugin.compat import VerlCouplingError
from pearl_verl.verl_plugin.names import VALIDATION_TIME_KEY
from pearl_verl.verl_plugin.pearl_sync import (
    PearlSyncTrainer,
    check_pearl_trainer_config,
    dataset_order,
    final_session_rows,
)

pytestmark = [pytest.mark.ray, pytest.mark.serial]  # Ray: one at a time under pytest-xdist

# Per session: (uid, judge_ok, completed, tutor_turns, scores). Response masks alternate tutor (1)
# and student (0) segments of different lengths.
SESSIONS = [
    ("q1", 1, 1, 4, [1.0, 1.0, 1.0, 0.9, 0.8, 0.6, 0.8, 1.0]),
    ("q1", 1, 1, 9, [1.0, 1.0, 1.0, 0.9, 0.8, 0.6, 0.8, 1.0]),
    ("q1", 1, 1, 3, [1.0, 0.2, 1.0, 0.7, 0.3, 0.2, 0.5, 0.9]),
    ("q1", 0, 1, 6, [None] * 8),
    ("q2", 1, 0, 15, [0.0] * 8),
    ("q2", 1, 1, 7, [0.9, 0.9, 1.0, 0.8, 0.8, 0.5, 0.7, 0.9]),
    ("q2", 1, 1, 5, [1.0, 0.6, 1.0, 0.8, 0.6, 0.4, 0.6, 0.9]),
    ("q2", 1, 1, 8, [1.0, 1.0, 1.0, 0.95, 0.9, 0.85, 0.9, 1.0]),
]


def _response_mask(turns: int, seed: int) -> list[int]:
    gen = np.random.default_rng(seed)
    mask: list[int] = []
    for _ in range(max(turns, 1)):
        mask += [1] * int(gen.integers(2, 6)) + [0] * int(gen.integers(1, 5))
    return mask


def _judge_replies(session: int, ok: int) -> tuple[int, int]:
    """(replies, unparsed) of a session's judgement: a failed one used up its 3 tries, some ok ones retried once."""
    replies = 3 if not ok else 1 + session % 2
    return replies, replies - ok


def _put_sessions(tq, partition="train", padding_rows=0, old_log_probs_shift=None, end_reasons=None, episodes=None):
    keys, fields, tags = [], [], []
    for session, (uid, ok, done, turns, scores) in enumerate(SESSIONS):
        mask = _response_mask(turns, session)
        info = {**dict(zip(DIMENSIONS, scores)), "judge_ok": ok, "completed": done, "tutor_turns": turns}
        info["judge_replies"], info["judge_unparsed"] = _judge_replies(session, ok)
        extra = {"reward_extra_info": info}
        if episodes is not None:  # what the pearl_tutor agent loop records next to the reward loop's info
            extra["pearl_episode"] = episodes[session]
        if end_reasons is not None:  # what the pearl_tutor agent loop adds next to the reward loop's info
            extra["pearl_end_reason"] = end_reasons.get(session, "tutor_ended")
            extra["pearl_student_replies"], extra["pearl_student_fallbacks"] = turns + 1, session % 2
        output = AgentLoopOutput(
            prompt_ids=[5, 6, 7],
            response_ids=list(range(10, 10 + len(mask))),
            response_mask=mask,
            reward_score=0.0 if not ok else float(np.mean(scores)),
            num_turns=2 * turns + 1,
            metrics=AgentLoopMetrics(),
            extra_fields=extra,
        )
        if old_log_probs_shift is not None:
            output.response_logprobs = [0.0] * len(mask)
        field = output.as_dict()
        field.update({"uid": uid, "session_id": session, "global_steps": 1, "index": int(uid[1:]) - 1})
        if old_log_probs_shift is not None:  # what _compute_old_log_prob writes
            field["old_log_probs"] = torch.full((len(mask),), float(old_log_probs_shift.get(session, 0.0)))
        keys.append(f"{uid}_{session}_0")
        fields.append(field)
        tags.append({"status": "success", "global_steps": 1})
    for i in range(padding_rows):  # what verl's upsample_batch_to_divisible_size appends
        pad = dict(fields[0], uid="pad0", session_id=i, response_mask=torch.zeros(1, dtype=torch.int64),
                   responses=torch.ones(1, dtype=torch.int64), rm_scores=torch.zeros(1))
        keys.append(f"pad0_{i}_0")
        fields.append(pad)
        tags.append({"status": "success", "global_steps": 1, "is_padding": True})
    tq.kv_batch_put(keys=keys, partition_id=partition, fields=list_of_dict_to_tensordict(fields), tags=tags)
    return KVBatchMeta(partition_id=partition, keys=keys, tags=tags)


def _expected_scalars(gamma):
    scores = torch.tensor([[float("nan") if v is None else v for v in s[4]] for s in SESSIONS])
    return compute_pearl_advantage(
        scores, [s[3] for s in SESSIONS], [bool(s[2]) for s in SESSIONS], [s[0] for s in SESSIONS],
        gamma=gamma, valid=[bool(s[1]) for s in SESSIONS],
    )


def _trainer(verl_config, *overrides):
    cfg = verl_config(
        ["algorithm.adv_estimator=pearl", "trainer.v1.trainer_mode=pearl_sync", "actor_rollout_ref.rollout.n=4",
         "actor_rollout_ref.model.path=/unused", *overrides]
    )
    return PearlSyncTrainer(cfg)


def test_pearl_sync_puts_advantages_on_tutor_tokens_only(transfer_queue, verl_config):
    trainer = _trainer(verl_config, "+pearl.advantage.gamma=0.9")
    batch = _put_sessions(transfer_queue, partition="train")
    metrics = {}
    trainer._compute_advantage(batch, metrics)

    out = transfer_queue.kv_batch_get(keys=batch.keys, partition_id="train", select_fields=["advantages", "returns", "response_mask"])
    expected = _expected_scalars(gamma=0.9)
    assert expected.abs().sum() > 0
    for row, (adv, ret, mask) in enumerate(zip(out["advantages"].unbind(), out["returns"].unbind(), out["response_mask"].unbind())):
        assert adv.shape == mask.shape
        torch.testing.assert_close(adv, expected[row] * mask.float(), atol=1e-5, rtol=0)
        torch.testing.assert_close(ret, adv)
        assert (adv[mask == 0] == 0).all()  # student tokens carry no advantage
        if expected[row] != 0:
            assert (adv[mask == 1] != 0).all()
    assert (out["advantages"].unbind()[3] == 0).all()  # the judge failed on session 3

    assert metrics["pearl/judge/failure_rate"] == pytest.approx(1 / 8)
    assert metrics["pearl/episode/completed_rate"] == pytest.approx(7 / 8)
    assert metrics["pearl/reward/meta/mean"] == pytest.approx(np.mean([0.6, 0.6, 0.2, 0.0, 0.5, 0.4, 0.85]))
    assert metrics["pearl/advantage/max"] == pytest.approx(expected.max().item(), abs=1e-5)


def test_rollout_dump_adds_each_dialogue_with_its_judge_fields_and_advantage(transfer_queue, verl_config, tmp_path,
                                                                            monkeypatch):
    from verl.trainer.ppo.v1.trainer_sync import PPOTrainerSync

    from pearl_verl.view.records import read_sources

    dumped = []
    monkeypatch.setattr(PPOTrainerSync, "_log_rollout_data", lambda self, *args: dumped.append(args))  # verl's part
    episodes = [{"problem": {"problem_id": f"p-{uid}", "question": "q", "reference_solution": "r", "answer": "1",
                             "source": "gsm8k"},
                 "condition": {"profile": {}, "mastery": None, "seed": 0, "misconception": None},
                 "turns": [{"role": "student", "text": "help"},
                           {"role": "tutor", "text": "x" * (9_000 if i == 0 else 5)}],
                 "student_trace": [], "end_reason": "tutor_ended"} for i, (uid, *_) in enumerate(SESSIONS)]
    trainer = _trainer(verl_config, "+pearl.advantage.gamma=0.9")
    trainer.global_steps = 7
    batch = _put_sessions(transfer_queue, partition="dump", padding_rows=1, episodes=episodes)
    trainer._compute_advantage(batch, {})
    trainer._log_rollout_data(batch, {}, str(tmp_path))
    assert len(dumped) == 1  # verl's own dump still runs
    rows = [json.loads(line) for line in (tmp_path / "7.pearl.jsonl").read_text().splitlines()]
    assert len(rows) == len(SESSIONS)  # one per dialogue, padding left out
    expected = _expected_scalars(gamma=0.9)
    assert [r["advantage"] for r in rows] == pytest.approx(expected.tolist(), abs=1e-5)
    assert rows[3]["judge"]["judge_ok"] == 0 and rows[3]["shaped"] is None and rows[3]["reward"] is None
    assert len(rows[0]["shaped"]) == 8 and rows[0]["uid"] == "q1"
    assert rows[0]["episode"]["turns"][1]["text"].endswith("[... 1000 more characters cut in this dump]")
    records = read_sources([tmp_path])  # what pearl-verl view makes of the folder
    assert {r["source"] for r in records} == {"train"} and {r["step"] for r in records} == {7}
    assert sorted(r["advantage"] for r in records) == pytest.approx(sorted(expected.tolist()), abs=1e-5)


def test_validation_writes_each_judged_dialogue_before_verl_clears_it(transfer_queue, verl_config, tmp_path,
                                                                    monkeypatch):
    from verl.trainer.ppo.v1.trainer_sync import PPOTrainerSync

    from pearl_verl.train_local.heldout import HeldOut

    episodes = [{"problem": {"problem_id": uid, "question": f"question {uid}", "reference_solution": "r", "answer": "1",
                             "source": "gsm8k"},
                 "condition": {"profile": {}, "mastery": None, "seed": 0, "misconception": None},
                 "turns": [{"role": "student", "text": "help"}, {"role": "tutor", "text": f"tutor {i}"}],
                 "student_trace": [], "end_reason": "tutor_ended"} for i, (uid, *_) in enumerate(SESSIONS)]

    class ReplayBuffer:  # verl's hands out the batch the agent loops wrote, in the order they finished
        def sample(self, global_steps, partition_id, batch_size):
            return KVBatchMeta(partition_id="val", keys=batch.keys[::-1], tags=batch.tags[::-1]), {}

    def verls_validate(self):  # takes the batch from the replay buffer, then clears it, as verl's does
        taken, _ = self.replay_buffer.sample(global_steps=self.global_steps, partition_id="val", batch_size=2)
        transfer_queue.kv_clear(keys=taken.keys, partition_id=taken.partition_id)
        return {"val-core/unknown/reward/mean@8": 0.5}

    monkeypatch.setattr(PPOTrainerSync, "_validate", verls_validate)
    trainer = _trainer(verl_config, f"trainer.validation_data_dir={tmp_path}")
    trainer.global_steps, trainer.replay_buffer = 4, ReplayBuffer()
    batch = _put_sessions(transfer_queue, partition="val", episodes=list(reversed(episodes)))
    metrics = trainer._validate()
    assert metrics.pop(VALIDATION_TIME_KEY) > 0 and metrics == {"val-core/unknown/reward/mean@8": 0.5}  # timed, as verl does not
    assert "sample" not in vars(trainer.replay_buffer)  # the buffer's own method again
    rows = [json.loads(line) for line in (tmp_path / "4.pearl.jsonl").read_text().splitlines()]
    assert [(r["problem"], r["member"]) for r in rows] == [(0, 0), (0, 1), (0, 2), (0, 3), (1, 4), (1, 5), (1, 6), (1, 7)]
    assert [r["episode"]["turns"][1]["text"] for r in rows] == [f"tutor {7 - i}" for i in range(8)]
    assert rows[3]["reward"] is None and rows[0]["reward"] == pytest.approx(np.mean(SESSIONS[0][4]))
    # what train-local's summary reads: two groups of four dialogues per problem
    held = HeldOut.from_validation(tmp_path / "4.pearl.jsonl", seeds=2, group_size=4)
    assert held.step == 4 and held.slots == [[0, 0, 0], [0, 0, 1], [0, 0, 2], [0, 0, 3],
                                             [1, 1, 0], [1, 1, 1], [1, 1, 2], [1, 1, 3]]
    assert held.seed_means == pytest.approx([np.mean([np.mean(s[4]) for s in SESSIONS[:3]]),
                                             np.mean([np.mean(s[4]) for s in SESSIONS[4:]])])


def test_padding_rows_get_zero_and_stay_out_of_metrics(transfer_queue, verl_config):
    trainer = _trainer(verl_config)
    batch = _put_sessions(transfer_queue, partition="pad", padding_rows=2)
    metrics = {}
    trainer._compute_advantage(batch, metrics)
    out = transfer_queue.kv_batch_get(keys=batch.keys, partition_id="pad", select_fields=["advantages"])
    rows = out["advantages"].unbind()
    assert all((row == 0).all() for row in rows[-2:])
    expected = _expected_scalars(gamma=0.98)
    first = rows[0]
    assert first[first != 0][0].item() == pytest.approx(expected[0].item(), abs=1e-5)
    assert metrics["pearl/judge/failure_rate"] == pytest.approx(1 / 8)


def test_other_estimators_run_verls_own_step(transfer_queue, verl_config):
    trainer = _trainer(verl_config, "algorithm.adv_estimator=grpo")
    batch = _put_sessions(transfer_queue, partition="grpo")
    metrics = {}
    trainer._compute_advantage(batch, metrics)
    out = transfer_queue.kv_batch_get(keys=batch.keys, partition_id="grpo", select_fields=["advantages", "rm_scores", "response_mask"])
    rewards = out["rm_scores"].to_padded_tensor(0.0)
    mask = out["response_mask"].to_padded_tensor(0)
    want, _ = core_algos.compute_grpo_outcome_advantage(rewards, mask, np.array([s[0] for s in SESSIONS], dtype=object))
    torch.testing.assert_close(out["advantages"].to_padded_tensor(0.0), want)
    assert not any(key.startswith("pearl/") for key in metrics)


def test_rollout_rejection_sampling_is_applied_before_the_advantage(transfer_queue, verl_config):
    trainer = _trainer(
        verl_config,
        "algorithm.rollout_correction.rollout_rs=seq_max_k2",
        "algorithm.rollout_correction.rollout_rs_threshold=1.0",
    )
    # session 0's training policy disagrees with the rollout policy: k2 = 0.5 * 5^2 > 1 -> rejected
    batch = _put_sessions(transfer_queue, partition="rs", old_log_probs_shift={0: 5.0})
    metrics = {}
    trainer._compute_advantage(batch, metrics)
    out = transfer_queue.kv_batch_get(keys=batch.keys, partition_id="rs", select_fields=["advantages", "response_mask"])
    advantages, masks = out["advantages"].unbind(), out["response_mask"].unbind()
    assert (masks[0] == 0).all() and (advantages[0] == 0).all()
    assert masks[1].sum() > 0 and (advantages[1][masks[1] == 1] != 0).all()
    assert any(key.startswith("rollout_corr/") for key in metrics)


def test_kl_in_reward_is_rejected_with_the_fix(verl_config):
    cfg = verl_config(["algorithm.adv_estimator=pearl", "algorithm.use_kl_in_reward=True"])
    with pytest.raises(ValueError, match=r"use_kl_in_reward=True has no effect with the pearl estimator"):
        check_pearl_trainer_config(cfg)
    check_pearl_trainer_config(verl_config(["algorithm.adv_estimator=grpo", "algorithm.use_kl_in_reward=True"]))


def test_final_session_rows():
    keys = ["a_0_0", "a_0_1", "a_1_0", "b_0_2", "b_0_0", "u_with_underscore_3_0"]
    final, row_to_final = final_session_rows(keys)
    assert [keys[i] for i in final] == ["a_0_1", "a_1_0", "b_0_2", "u_with_underscore_3_0"]
    assert row_to_final.tolist() == [0, 0, 1, 2, 2, 3]
    with pytest.raises(VerlCouplingError, match="Unexpected TransferQueue key 'nounderscore'"):
        final_session_rows(["nounderscore"])


def test_a_batch_is_put_in_dataset_order_whatever_order_its_dialogues_finished(monkeypatch):
    """The update's micro-batches follow the data, not timing: rows by dataset row, member, output; tags with them."""
    from pearl_verl.verl_plugin import pearl_sync

    finished = [("b9_1_0", 7), ("a1_0_1", 3), ("c5_0_0", 5), ("a1_0_0", 3), ("b9_0_0", 7)]  # uid_member_output, row
    rows = dict(finished)
    monkeypatch.setattr(pearl_sync.tq, "kv_batch_get", lambda keys, partition_id, select_fields: {
        "index": torch.tensor([rows[k] for k in keys])})
    batch = KVBatchMeta(keys=[k for k, _ in finished], tags=[{"key": k} for k, _ in finished], partition_id="train")
    ordered = dataset_order(batch)
    assert ordered.keys == ["a1_0_0", "a1_0_1", "c5_0_0", "b9_0_0", "b9_1_0"]  # the uids (uuid4s) play no part
    assert [t["key"] for t in ordered.tags] == ordered.keys and ordered.partition_id == "train"
    assert dataset_order(KVBatchMeta(keys=["x_0_0"], tags=[{}])).keys == ["x_0_0"]


def test_pearl_judge_outside_pearl_sync_is_refused_at_startup(verl_config):
    # verl's own sync trainer hands the estimator only the scalar reward: failed judgements would count as 0.0
    judged = ["algorithm.adv_estimator=pearl", "reward.reward_manager.name=pearl_judge"]
    for mode in ("sync", "async"):
        with pytest.raises(ValueError, match=r"Set trainer\.v1\.trainer_mode=pearl_sync"):
            check_pearl_trainer_config(verl_config([*judged, f"trainer.v1.trainer_mode={mode}"]))
    check_pearl_trainer_config(verl_config([*judged, "trainer.v1.trainer_mode=pearl_sync"]))
    check_pearl_trainer_config(verl_config([*judged, "trainer.use_v1=false"]))  # main_ppo installs the legacy hook
    check_pearl_trainer_config(verl_config(["algorithm.adv_estimator=pearl"]))  # a scalar reward manager: the fallback


def _stub_verl_step_end(monkeypatch):
    """verl's checkpoint save and weight sync, recorded instead of run (no workers on CPU)."""
    from verl.trainer.ppo.v1.trainer_base import PPOTrainer
    from verl.trainer.ppo.v1.trainer_sync import PPOTrainerSync

    calls = {"saved": [], "synced": []}
    monkeypatch.setattr(PPOTrainer, "_save_checkpoint", lambda self: calls["saved"].append(self.global_steps))
    monkeypatch.setattr(PPOTrainerSync, "on_step_end", lambda self: calls["synced"].append(self.global_steps))
    return calls


def _run_steps(trainer, tq, steps, partition, verl_saves=()):
    """What verl's fit does per step around the advantage step: advantage, update, save, on_step_end, log."""
    logged = []
    try:
        for step in steps:
            trainer.on_step_begin()
            trainer.global_steps = step
            batch = _put_sessions(tq, partition=f"{partition}{step}", end_reasons={3: "student_error"})
            trainer._compute_advantage(batch, {})
            if step in verl_saves:  # trainer.save_freq's checkpoint, saved before on_step_end
                trainer._save_checkpoint()
            trainer.on_step_end()
            logged.append(step)  # verl logs the step's metrics after on_step_end
        trainer.raise_pending_stop()  # what fit does after its last step
    finally:
        trainer.test_logged_steps = logged


def test_pearl_sync_stops_after_the_kth_failing_steps_update_with_that_step_saved(
    transfer_queue, verl_config, monkeypatch
):
    from pearl_verl.advantage.failure_guard import TrainingStalled

    calls = _stub_verl_step_end(monkeypatch)
    # SESSIONS flag one dialogue in 8 (failure rate 0.125, a student_error): above 0.1, so every step fails
    failing = (
        "+pearl.failure_guard.max_failure_rate=0.1",
        "+pearl.failure_guard.patience=2",
        "trainer.default_local_dir=/ckpt",
    )
    trainer = _trainer(verl_config, *failing)
    with pytest.raises(TrainingStalled) as stop:
        _run_steps(trainer, transfer_queue, [1, 2, 3], "guard")
    assert trainer.test_logged_steps == [1, 2]  # the tripping step's metrics are logged; step 3 never starts
    message = str(stop.value)
    assert "stayed above 0.1 for 2 consecutive steps (steps 1-2: 0.12, 0.12)" in message
    assert "What failed, as a mean share of dialogues over these steps: the student endpoint" in message
    assert "relaunch with trainer.resume_mode=auto" in message
    assert "Step 2 (its update done) is saved in /ckpt/global_step_2." in message
    assert calls == {"saved": [2], "synced": [1]}  # step 1 went on; step 2 saved, its replicas never woken

    calls["saved"].clear()
    with pytest.raises(TrainingStalled, match="Step 2 .* is saved in"):  # verl saved step 2 itself: not twice
        _run_steps(_trainer(verl_config, *failing), transfer_queue, [1, 2], "saved", verl_saves={2})
    assert calls["saved"] == [2]

    calls["synced"].clear()
    _run_steps(_trainer(verl_config, "+pearl.failure_guard.patience=2"), transfer_queue, [1, 2, 3], "healthy")
    assert calls["synced"] == [1, 2, 3]  # default threshold 0.5: 0.125 is healthy


def test_pearl_sync_logs_what_failed(transfer_queue, verl_config):
    metrics = {}
    _trainer(verl_config)._compute_advantage(
        _put_sessions(transfer_queue, partition="causes", end_reasons={3: "student_error"}), metrics
    )
    assert metrics["pearl/failure/student_rate"] == pytest.approx(1 / 8)
    assert metrics["pearl/failure/judge_rate"] == metrics["pearl/failure/tutor_rate"] == 0.0
    replies = [turns + 1 for _, _, _, turns, _ in SESSIONS]
    fallbacks = [session % 2 for session in range(len(SESSIONS))]
    assert metrics["pearl/student/fallback_rate"] == pytest.approx(sum(fallbacks) / sum(replies))
    judge = [_judge_replies(session, ok) for session, (_, ok, _, _, _) in enumerate(SESSIONS)]
    unparsed, replies = sum(u for _, u in judge), sum(r for r, _ in judge)
    assert metrics["pearl/judge/parse_failure_rate"] == pytest.approx(unparsed / replies)
    assert 0 < metrics["pearl/judge/parse_failure_rate"] < 1
