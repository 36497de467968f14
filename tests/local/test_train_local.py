"""``pearl-verl train-local`` end to end: the real entry point, a tiny model, verl's dispatch.

Runs in subprocesses: training installs verl's host-CPU platform and a process group, which must
not leak into the other tests' process.
"""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SMALL = [
    "--num-problems", "2", "--batch-problems", "1", "--group-size", "2", "--max-tutor-turns", "2",
    "--eval-problems", "1", "--eval-every", "2", "--save-every", "2", "--eval-seeds", "1", "--cold-start-steps", "0",
]

# Records what verl's dispatch hands out while the real command runs (the estimator by
# algorithm.adv_estimator, the policy loss by policy_loss.loss_mode): proof that training goes
# through verl's registries, not around them.
SPY = textwrap.dedent(
    """
    import json, sys
    from verl.trainer.ppo import core_algos
    from verl.workers.utils import losses
    seen = []

    def spy(module, getter):
        inner = getattr(module, getter)
        def wrapper(name):
            fn = inner(name)
            seen.append([str(getattr(name, "value", name)), fn.__module__ + "." + fn.__name__])
            return fn
        setattr(module, getter, wrapper)

    spy(core_algos, "get_adv_estimator_fn")
    spy(losses, "get_policy_loss_fn")
    from pearl_verl.cli import main
    code = main(sys.argv[1:])
    print("SPY " + json.dumps(seen))
    sys.exit(code)
    """
)


def _run(args, script=None, streams=False):
    command = [sys.executable, "-c", script, *args] if script else [sys.executable, "-m", "pearl_verl.cli", *args]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return (proc.stdout, proc.stderr) if streams else proc.stdout


def _metrics(out: Path):
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]


def test_two_steps_train_through_verls_dispatch_and_resume(tmp_path):
    out = tmp_path / "run"
    stdout, stderr = _run(["train-local", "--out-dir", str(out), "--steps", "2", *SMALL], script=SPY, streams=True)
    seen = json.loads(stdout.split("SPY ", 1)[1].splitlines()[0])
    estimators = [fn for name, fn in seen if name == "pearl"]
    losses = [fn for name, fn in seen if name == "gspo"]
    # one lookup per step, and one by the launcher's configuration check
    assert estimators == ["pearl_verl.verl_plugin.estimator.compute_pearl_outcome_advantage"] * 3
    assert len(losses) >= 2 and set(losses) == {"verl.trainer.ppo.core_algos.compute_policy_loss_gspo"}
    assert {name for name, _ in seen} == {"pearl", "gspo"}
    rows = _metrics(out)
    train = [r for r in rows if "reward/mean" in r]
    assert [r["step"] for r in train] == [1, 2]
    assert all(r["actor/param_change"] > 0 for r in train)  # parameters change every step
    assert all(r["time/update_s"] > 0 and "pearl/judge/failure_rate" in r for r in train)
    evals = [r for r in rows if "eval/reward/mean" in r]
    assert [r["step"] for r in evals] == [0, 2] and all(r["eval/dialogues"] == 2 for r in evals)
    assert (out / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "checkpoints" / "global_step_2" / "pearl_local_state.json").exists()
    assert "held-out judge reward" in stdout

    # a person reads the summary and the progress bar; verl's and torch's notes go to train.log
    summary = (out / "summary.txt").read_text()
    assert "95% interval" in summary and "what the tutor does" in summary and summary.strip() in stdout
    assert "## Dialogue 1" in (out / "dialogues.md").read_text()
    # every step's dialogues with their judgement, shaped rewards and the advantage the update used
    dumped = [json.loads(line) for line in (out / "dialogues" / "step_0002.jsonl").read_text().splitlines()]
    assert len(dumped) == 2 and {d["step"] for d in dumped} == {2}  # 1 problem x group of 2
    assert len({d["uid"] for d in dumped}) == 1
    for d in dumped:
        assert d["episode"]["turns"] and d["judge"]["judge_ok"] in (0, 1)
        if d["judge"]["judge_ok"]:
            assert len(d["judge"]["criteria"]) == 24 and len(d["shaped"]) == 8 and d["reward"] is not None
    held = [json.loads(line) for line in (out / "heldout.jsonl").read_text().splitlines()]
    assert all(len(h["judgements"]) == len(h["episodes"]) for h in held)  # each held-out judgement kept whole
    assert all(len(j["criteria"]) == 24 for h in held for j in h["judgements"] if j["judge_ok"])
    for uid in {d["uid"] for d in dumped}:  # within a group, advantages are z-scores: they sum to 0
        group = [d["advantage"] for d in dumped if d["uid"] == uid and d["judge"]["judge_ok"]]
        assert abs(sum(group)) < 1e-4
    assert "train-local: 100%" in stderr
    assert "validate_config" in (out / "train.log").read_text()

    # resumed with a bfloat16 rollout copy (the fp32 policy's weights load into it and it generates)
    # and a float32 update (verl's FSDP mixed precision set to fp32 instead of its bf16 autocast)
    resume = ["--steps", "3", "--resume", "--rollout-dtype", "bfloat16", "--train-dtype", "float32"]
    stdout, stderr = _run(["train-local", "--out-dir", str(out), *resume, *SMALL], streams=True)
    # the real entry point: nothing of verl's, transformers' or torch's chatter on screen
    chatter = ("validate_config", "UserWarning", "Before FSDP", "latform", "WARNING", "Loading weights")
    assert not any(text in stdout + stderr for text in chatter), (stdout + stderr)[-2000:]
    assert "held-out judge reward, step 0 -> 3" in stdout
    rows = _metrics(out)
    assert [r["step"] for r in rows if "reward/mean" in r] == [1, 2, 3]  # resumed, nothing repeated
    assert (out / "checkpoints" / "global_step_3").exists()
    state = json.loads((out / "checkpoints" / "global_step_3" / "pearl_local_state.json").read_text())
    assert (state["config"]["rollout_dtype"], state["config"]["train_dtype"]) == ("bfloat16", "float32")
    last = [r for r in rows if "reward/mean" in r][-1]
    assert last["actor/param_change"] > 0  # the float32 update ran


def test_bad_settings_fail_before_any_work(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "pearl_verl.cli", "train-local", "--out-dir", str(tmp_path), "--group-size", "1"],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 2 and "group_size=1 must be >= 2" in proc.stderr


def test_cold_start_sft_runs_before_rl_on_the_same_actor(tmp_path):
    out = tmp_path / "cold"
    stdout = _run(["train-local", "--out-dir", str(out), "--steps", "1", "--judge", "probe", *SMALL, "--cold-start-steps", "3",
                   "--cold-start-dialogues", "2", "--max-tutor-turns", "8", "--cold-start-lr", "1e-2", "--lr", "1e-3"])
    rows = _metrics(out)
    assert rows[0].get("phase") == "cold_start"  # RL starts from the cold start: no evaluation of random weights
    cold = rows[0]
    assert cold["cold_start/steps"] == 3 and cold["cold_start/dialogues"] >= 1
    assert cold["cold_start/dialogues"] + cold["cold_start/dialogues_dropped"] == 4
    assert 0 < cold["cold_start/loss_last"] < cold["cold_start/loss_first"]  # SFT moved the tiny model
    assert cold["eval/dialogues"] == 2  # evaluated again after the cold start
    assert (out / "cold_start" / "teacher_dialogues.parquet").exists()
    assert [r["step"] for r in rows if "reward/mean" in r] == [1] and "held-out judge reward" in stdout
    assert [r["actor/lr"] for r in rows if "reward/mean" in r] == [1e-3]  # RL's rate again after SFT's


# The offline judge replaced by one whose endpoint is down: every judgement fails (judge_ok=0).
DOWN = textwrap.dedent(
    """
    import sys
    from pearl_verl.judge import offline
    from pearl_verl.judge.types import JudgeResult

    async def down(self, episode):
        return JudgeResult(ok=False, error="connection refused", attempts=3)

    offline.HeuristicJudge.judge = down
    from pearl_verl.cli import main
    sys.exit(main(sys.argv[1:]))
    """
)


def test_a_run_whose_judge_always_fails_stops_with_a_resumable_checkpoint(tmp_path):
    out = tmp_path / "down"
    command = [sys.executable, "-c", DOWN, "train-local", "--out-dir", str(out), "--steps", "10", *SMALL,
               "--eval-problems", "0", "--save-every", "10"]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 1, proc.stderr[-3000:]
    error = proc.stderr.strip().splitlines()[-1]
    assert error.startswith("error: pearl/judge/failure_rate stayed above 0.5 for 3 consecutive steps (steps 1-3: 1.00")
    assert "rerun with --resume" in error and "the judge endpoint" in error
    assert [r["step"] for r in _metrics(out)] == [1, 2, 3]  # stopped at the third step, not the tenth
    assert (out / "checkpoints" / "global_step_3" / "pearl_local_state.json").exists()


def test_bf16_is_chosen_only_where_it_is_faster(monkeypatch):
    import torch

    from pearl_verl.local import train
    from pearl_verl.local.runtime import Device, device_overrides

    monkeypatch.setattr(train, "cpu_has_native_bf16", lambda: True)
    assert train.resolve_dtype("auto", on_gpu=False, model="smollm2") == torch.bfloat16
    assert train.resolve_dtype("auto", on_gpu=False, model="tiny") == torch.float32
    assert train.resolve_dtype("auto", on_gpu=False, model="tiny", role="train") == torch.bfloat16
    assert train.resolve_dtype("float32", on_gpu=True, model="smollm2") == torch.float32
    monkeypatch.setattr(train, "cpu_has_native_bf16", lambda: False)
    assert train.resolve_dtype("auto", on_gpu=False, model="smollm2") == torch.float32
    assert train.resolve_dtype("auto", on_gpu=False, model="smollm2", role="train") == torch.float32
    assert train.resolve_dtype("auto", on_gpu=True, model="tiny") == torch.bfloat16
    with pytest.raises(ValueError, match="rollout_dtype='fp8' must be one of"):
        train.LocalTrainConfig(rollout_dtype="fp8")
    with pytest.raises(ValueError, match="train_dtype='half' must be one of"):
        train.LocalTrainConfig(train_dtype="half")
    # verl's FSDP engine autocasts to bf16 unless mixed_precision says float32
    fp32 = [o for o in device_overrides(Device("cpu"), "float32") if "mixed_precision" in o]
    assert fp32 == ["+actor_rollout_ref.actor.fsdp_config.mixed_precision={param_dtype:fp32,reduce_dtype:fp32,"
                    "buffer_dtype:fp32}"]
    assert not [o for o in device_overrides(Device("cpu"), "bfloat16") if "mixed_precision" in o]
