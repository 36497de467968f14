"""``pearl-verl train-local`` end to end: the real entry point, a tiny model, verl's own trainer.

Runs in subprocesses: the command installs verl's host-CPU platform, and starts verl's SFT trainer (the cold
start) and verl's ``main_ppo`` with its Ray cluster as children of its own.
"""

import json
import math
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import yaml

from pearl_verl.train_local.local_config import MIN_LR_RATIO

# The two tests that run verl's trainer are marked serial (one at a time under pytest-xdist, tests/conftest.py); the
# others fail before any trainer starts or replace it, and run on the other worker beside them

SMALL = [
    "--num-problems", "2", "--batch-problems", "1", "--group-size", "2", "--max-tutor-turns", "2",
    "--eval-problems", "1", "--eval-every", "2", "--save-every", "2", "--eval-seeds", "1",
]
# 8-turn dialogues: enough tutor tokens a batch for 3 steps of verl's SFT trainer to lower the loss at each step at the
# tiny model's SFT rate, 5e-3 (at 1e-2 the third step overshoots: 6.79, 6.47, 7.61), twice RL's 2.5e-3
COLD = ["--cold-start-steps", "3", "--cold-start-dialogues", "2", "--cold-start-lr", "5e-3", "--max-tutor-turns", "8"]


def _run(args, expect=0):
    proc = subprocess.run([sys.executable, "-m", "pearl_verl.cli", *args], capture_output=True, text=True, timeout=900)
    assert proc.returncode == expect, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def _cosine_lr(step: int, steps: int, lr: float = 2.5e-3) -> float:
    """The rate verl logs at ``step`` of a cosine schedule over ``steps`` from ``lr`` down to MIN_LR_RATIO of it (the
    scheduler's, after the step's update)."""
    return lr * (MIN_LR_RATIO + (1 - MIN_LR_RATIO) * 0.5 * (1 + math.cos(math.pi * step / steps)))


def _metrics(out: Path):
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]


def _verl_overrides(out: Path) -> list[str]:
    """The overrides verl's main_ppo received (Hydra keeps them beside its run)."""
    return yaml.safe_load((out / "hydra" / ".hydra" / "overrides.yaml").read_text())


def _verl_config(out: Path) -> dict:
    """The config verl's main_ppo ran with (Hydra keeps it beside its run, interpolations unresolved)."""
    return yaml.safe_load((out / "hydra" / ".hydra" / "config.yaml").read_text())


def _stop_with_sigterm(command: list[str], marker: str, ready, expect_running: tuple[str, ...],
                       processes_with) -> subprocess.CompletedProcess:
    """Start ``command``, send it SIGTERM once ``ready()`` holds; returns the finished process, after checking that
    processes whose command lines name each of ``expect_running`` were running then."""
    env = {**os.environ, "PEARL_TEST_RUN": marker}
    proc = subprocess.Popen([sys.executable, "-m", "pearl_verl.cli", *command], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 900
    while not ready():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.1)  # a step's validation, the moment one stop must find, lasts about 1.5 s here
    running = processes_with(env=marker)
    assert all(any(name in c.lower() for c in running) for name in expect_running), running
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=300)
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


def _verl_logged(out: Path) -> list[int]:
    """The steps whose training row verl's file logger wrote in its current launch."""
    log = out / "verl_metrics.jsonl"
    lines = log.read_text().splitlines() if log.exists() else []
    return [row["step"] for row in map(json.loads, lines[:-1] if lines and not lines[-1].endswith("}") else lines)
            if any(key.startswith("pearl/") for key in row["data"])]


def _checkpointed_not_logged(out: Path, step: int) -> bool:
    """verl has checkpointed ``step`` and not yet logged it: inside the step, in its validation. Fails the test when
    verl logged the step before the poll saw its checkpoint (the window missed)."""
    latest = out / "checkpoints" / "latest_checkpointed_iteration.txt"
    if not latest.exists() or latest.read_text().strip() != str(step):
        return False
    assert step not in _verl_logged(out), f"verl logged step {step} before the poll saw its checkpoint"
    return True


STOPPED = "pearl-verl train-local: stopped by SIGTERM; the same command with --resume goes on from its last checkpoint"


@pytest.mark.serial
def test_cold_start_then_two_steps_through_main_ppo_then_sigterm_then_resume(tmp_path, processes_with):
    out = tmp_path / "run"
    marker = f"pearl-test-{uuid.uuid4().hex}"
    command = ["train-local", "--out-dir", str(out), "--steps", "10", *SMALL, *COLD]
    # a stop during the cold start, in verl's SFT trainer (a torchrun child): nothing of it is left, nothing counts
    # as done, and --resume, finding no checkpoint, starts the run from the beginning, as the message says (more SFT
    # steps than the cold start below, so that the signal finds it running)
    sft_log = out / "cold_start" / "verl_metrics.jsonl"
    early = _stop_with_sigterm([*command, "--cold-start-steps", "500"], f"{marker}-sft",
                               lambda: sft_log.is_file() and "train/loss" in sft_log.read_text(), ("sft_trainer",),
                               processes_with)
    assert early.returncode == 128 + signal.SIGTERM, early.stderr[-3000:]
    assert early.stderr.strip().splitlines()[-1] == (
        "pearl-verl train-local: stopped by SIGTERM; nothing was checkpointed yet: the same command starts it again")
    assert processes_with(env=f"{marker}-sft") == []
    assert not (out / "metrics.jsonl").exists() and not (out / "checkpoints").exists()
    # a batch scheduler's stop (SIGTERM) inside step 4 of 10, after verl saved its checkpoint and before it logged
    # its row (in the step's validation): verl's trainer and all of Ray's processes go with it
    killed = _stop_with_sigterm([*command, "--resume"], marker, lambda: _checkpointed_not_logged(out, 4),
                                ("main_ppo", "ray"), processes_with)
    assert "holds no RL checkpoint to resume from; the run starts from the beginning" in killed.stderr
    assert killed.returncode == 128 + signal.SIGTERM, killed.stderr[-3000:]
    assert killed.stderr.strip().splitlines()[-1] == STOPPED
    assert processes_with(env=marker) == []  # nothing of the run is left, not even an orphan adopted by init
    assert int((out / "checkpoints" / "latest_checkpointed_iteration.txt").read_text()) == 4
    # verl logs a step after saving it: had it logged step 4 before it ended, the resume would go on from there
    went_back = 4 not in _verl_logged(out)
    rows = _metrics(out)
    kinds = {name: {json.loads(line)["row_kind"] for path in paths for line in path.read_text().splitlines()}
             for name, paths in (("metrics", [out / "metrics.jsonl"]), ("heldout", [out / "heldout.jsonl"]),
                                 ("train", sorted((out / "dialogues").glob("step_*.jsonl"))))}
    assert kinds == {"metrics": {"metrics"}, "heldout": {"heldout"}, "train": {"train"}}  # each row says what it is
    recorded = [r["step"] for r in rows if "reward/mean" in r]
    assert recorded == [1, 2, 3] or (not went_back and recorded == [1, 2, 3, 4]), recorded
    cold = rows[0]
    assert (cold["step"], cold["phase"]) == (0, "cold_start")
    assert cold["cold_start/steps"] == 3 and cold["cold_start/dialogues"] + cold["cold_start/dialogues_dropped"] == 4
    assert 0 < cold["cold_start/loss_last"] < cold["cold_start/loss_first"]  # SFT trained the tiny model
    held0 = next(r for r in rows if r["phase"] == "heldout")  # the policy RL starts from, evaluated by verl
    assert (held0["step"], held0["eval/dialogues"]) == (0, 2) and held0["time/eval_s"] > 0
    # the cold start ran in verl's SFT trainer, from the pearl_sft_cpu config (as the cluster's from pearl_sft)
    sft = yaml.safe_load((out / "cold_start" / "hydra" / ".hydra" / "config.yaml").read_text())
    assert (sft["data"]["messages_key"], sft["optim"]["lr"], sft["trainer"]["device"]) == ("messages", 5e-3, "cpu")
    sft_rows = [json.loads(line)["data"] for line in (out / "cold_start" / "verl_metrics.jsonl").read_text().splitlines()]
    losses = [r["train/loss"] for r in sft_rows if "train/loss" in r]
    assert len(losses) == 3 and (losses[0], losses[-1]) == (cold["cold_start/loss_first"], cold["cold_start/loss_last"])
    # RL runs in verl's trainer, resuming the cold start's checkpoint, with PEARL's parts (the pearl_gspo_cpu config's)
    start = out.resolve() / "checkpoints" / "global_step_0"
    assert f"actor_rollout_ref.model.path={start / 'actor' / 'huggingface'}" in _verl_overrides(out)
    assert f"trainer.resume_from_path={start}" in _verl_overrides(out)
    config = _verl_config(out)
    actor_rollout = config["actor_rollout_ref"]
    assert (config["algorithm"]["adv_estimator"], actor_rollout["actor"]["policy_loss"]["loss_mode"]) == ("pearl", "gspo")
    assert (config["trainer"]["v1"]["trainer_mode"], config["reward"]["reward_manager"]["name"]) == (
        "pearl_sync", "pearl_judge")
    assert (actor_rollout["rollout"]["agent"]["default_agent_loop"], actor_rollout["rollout"]["name"]) == (
        "pearl_tutor", "hf")
    # the held-out evaluation is verl's validation: 2 dialogues (group 2 x 1 eval seed) per problem, every 2 steps
    assert (actor_rollout["rollout"]["val_kwargs"]["n"], config["trainer"]["test_freq"]) == (2, 2)
    # what verl logged: the judge's per-dimension rewards, the estimator's advantages, the update
    for r in (r for r in rows if "reward/mean" in r):
        assert r["pearl/judge/failure_rate"] == 0.0
        # a group whose two dialogues score alike has no contrast: no advantage, no gradient, and only then
        assert (r["actor/grad_norm"] > 0) == (r["pearl/advantage/nonzero_frac"] > 0), r
        assert {f"pearl/reward/{d}/mean" for d in ("acc", "leak", "emotion")} <= set(r)
        # float32 rollout (HF generate, its KV cache) against the trainer's full forward: a token's probability
        # differs by up to ~2e-4 here (2.02e-4 seen once); the weight sync itself is pinned by
        # test_main_ppo_on_cpu at lr 1e-2, where a dropped sync shows 7e-4 and more
        assert "pearl/advantage/nonzero_frac" in r and r["training/rollout_probs_diff_max"] < 5e-4
        # RL's rate on verl's cosine schedule over the run's 10 steps (the cold start's 5e-3 stayed with the SFT)
        assert r["actor/lr"] == pytest.approx(_cosine_lr(r["step"], 10))
    assert (out / "checkpoints" / "global_step_2" / "actor" / "huggingface" / "config.json").exists()
    # every step's dialogues with their judge fields, shaped rewards and the advantage the update used
    dumped = [json.loads(line) for line in (out / "dialogues" / "step_0002.jsonl").read_text().splitlines()]
    assert len(dumped) == 2 and {d["step"] for d in dumped} == {2} and len({d["uid"] for d in dumped}) == 1
    for d in dumped:
        assert d["episode"]["turns"] and d["judge"]["judge_ok"] == 1 and len(d["shaped"]) == 8
    assert abs(sum(d["advantage"] for d in dumped)) < 1e-4  # a group's advantages are z-scores

    # resumed with one more step: from step 2's checkpoint, as step 4's row was lost with the stop, so that steps 3 and
    # 4 run again (step 3's first row is dropped, not kept beside its second), then step 5, with verl's validation of
    # steps 4 and 5 (those of steps 0 and 2 were kept from the first run)
    last = 5
    proc = _run(["train-local", "--out-dir", str(out), "--steps", str(last), "--resume", *SMALL, *COLD])
    resumed_from = 2 if went_back else 4
    assert f"trainer.resume_from_path={out.resolve() / 'checkpoints' / f'global_step_{resumed_from}'}" in \
        _verl_overrides(out)
    assert went_back == ("RL goes on from step 2's checkpoint, running steps 3-4 again" in proc.stderr)
    rows = _metrics(out)
    assert [r["step"] for r in rows if "reward/mean" in r] == list(range(1, last + 1))  # none lost, none repeated
    # the resumed step trained on the whole stack too, with the checkpoint's weights in the rollout server
    resumed = next(r for r in rows if r["step"] == last and "reward/mean" in r)
    assert resumed["pearl/judge/failure_rate"] == 0.0 and resumed["training/rollout_probs_diff_max"] < 5e-4
    # the resumed run's schedule runs over its own 5 steps, from the checkpoint's scheduler step: its last step ends it
    assert "pearl/advantage/nonzero_frac" in resumed and resumed["actor/lr"] == pytest.approx(_cosine_lr(last, last))
    assert resumed["actor/lr"] == pytest.approx(2.5e-3 * MIN_LR_RATIO)
    assert [r["step"] for r in rows if "eval/reward/mean" in r] == [0, 2, 4, last]
    assert all(r["eval/dialogues"] == 2 for r in rows if "eval/reward/mean" in r)
    assert [r["phase"] for r in rows].count("cold_start") == 1  # the cold start is not redone
    assert (out / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # one dialogue row per held-out dialogue, as verl's reward loop judged it, in its slot (eval seed, problem, member)
    held = [json.loads(line) for line in (out / "heldout.jsonl").read_text().splitlines()]
    steps = [0, 2, 4, last]
    assert [(h["step"], h["slot"]) for h in held] == [(s, [0, 0, m]) for s in steps for m in (0, 1)]
    assert all(h["judge"]["judge_ok"] == 1 and h["episode"]["turns"] for h in held)
    assert all((out / "validation" / f"{step}.jsonl").exists() for step in steps)  # verl's own validation dump

    # a person reads the progress bar and the summary; verl's, Ray's and torch's output go to train.log
    summary = (out / "summary.txt").read_text()
    assert f"held-out judge reward, step 0 -> {last}" in proc.stdout
    assert "95% interval" in summary and "what the tutor does" in summary and summary.strip() in proc.stdout
    assert "train-local: 100%" in proc.stderr
    chatter = ("UserWarning", "WARNING", "TaskRunner", "ray", "Loading weights", "Traceback")
    for printed in (early.stdout + early.stderr, killed.stdout + killed.stderr, proc.stdout + proc.stderr):
        assert not any(text in printed for text in chatter), printed[-2000:]
    assert "TaskRunner" in (out / "train.log").read_text()
    assert "## Dialogue 1" in (out / "dialogues.md").read_text()


def test_bad_settings_fail_before_any_work(tmp_path):
    proc = _run(["train-local", "--out-dir", str(tmp_path), "--group-size", "1"], expect=2)
    assert "argument --group-size: got 1; allowed: a whole number from 2" in proc.stderr
    proc = _run(["train-local", "--out-dir", str(tmp_path / "x"), "trainer.no_such_key=1"], expect=2)
    assert "no_such_key" in proc.stderr and not (tmp_path / "x" / "checkpoints").exists()


# run_training with verl's trainer and the cold start replaced: what a resume starts from, decided from the run's
# files. Four resumes in one process (one model and config): after the cold start's hand-over, without it, from RL's
# checkpoint of step 2 with the last rows verl logged before the stop not yet recorded by train-local, and after a stop
# between verl's checkpoint of step 4 and its row of step 4
RESUME_PROBE = """
import json, shutil, sys
from pathlib import Path
import pearl_verl.train_local.verl_run as verl_run
from pearl_verl.train_local.local_config import LocalTrainConfig
from pearl_verl.train_local.train import LocalRun, run_training
out, stopped, unlogged = Path(sys.argv[1]), json.loads(sys.argv[2]), json.loads(sys.argv[3])
launched, metrics = [], []
verl_run.run_main_ppo = lambda overrides, **kw: launched.append(overrides)
LocalRun.cold_start = lambda self, log: {"cold_start/steps": -1}  # a cold start run anew shows as -1
config = LocalTrainConfig(out_dir=str(out), steps=3, num_problems=2, batch_problems=1, group_size=2,
                          eval_problems=1, eval_seeds=1, max_tutor_turns=2, cold_start_steps=3)
for case in ("after the hand-over", "in the cold start", "after step 2", "in step 4, after its checkpoint"):
    if case == "in the cold start":
        shutil.rmtree(out / "checkpoints")
    for name, text in {"after step 2": stopped, "in step 4, after its checkpoint": unlogged}.get(case, {}).items():
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_text(text)
    run_training(config, resume=True)
    metrics.append([json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()])
print(json.dumps({"launched": launched, "metrics": metrics}))
"""


def test_a_resume_starts_from_what_the_stopped_run_finished(tmp_path, make_episode):
    """--resume after a stop: between the cold start's hand-over and RL's first checkpoint (step --save-every) it keeps
    the cold start (its checkpoint and metrics row) and starts RL from it; without the hand-over it starts anew; after
    RL's checkpoint of step 2 it records what verl logged up to there that the stop kept train-local from recording
    (step 2's row and its validation, each held-out dialogue once), and nothing after it; after verl checkpointed step
    4 but was stopped before logging it (during its validation) it goes back to step 2's checkpoint, so that step 4
    runs, and is logged, again."""
    from pearl_verl.dialogue.row import dialogue_row
    from pearl_verl.dims import DIMENSIONS
    from pearl_verl.row_kinds import stamped

    out = tmp_path / "run"
    cold = stamped("metrics", {"step": 0, "phase": "cold_start", "cold_start/steps": 3, "cold_start/loss_last": 0.5})
    (out / "checkpoints" / "global_step_0" / "actor" / "huggingface").mkdir(parents=True)
    evaluation = stamped("metrics", {"step": 0, "phase": "heldout"})
    (out / "metrics.jsonl").write_text(json.dumps(cold) + "\n" + json.dumps(evaluation) + "\n")
    (out / "validation").mkdir()
    # the stop after step 2: verl checkpointed it and logged its row with its validation, train-local recorded step 1
    judge = {"judge_ok": 1, **dict.fromkeys(DIMENSIONS, 0.5)}
    episode = make_episode(["help", "What is 3 x 4?"]).to_dict()
    dump = [{**dialogue_row("heldout", episode, judge, 0.5, step=2, uid="u0"), "problem": 0, "member": member}
            for member in range(2)]
    verl_log = [{"step": step, "data": {"pearl/reward/acc/mean": 0.5, "actor/pg_loss": 0.0,
                                        **({"val-aux/pearl/validation_s": 7.0} if step == 2 else {})}}
                for step in (1, 2, 3)]
    recorded = [cold, stamped("metrics", {"step": 1, "phase": "train", "reward/mean": 0.5})]
    stopped = {"checkpoints/latest_checkpointed_iteration.txt": "2",
               "metrics.jsonl": "".join(json.dumps(row) + "\n" for row in recorded),
               "verl_metrics.jsonl": "".join(json.dumps(row) + "\n" for row in verl_log),
               "validation/2.pearl.jsonl": "".join(json.dumps(row) + "\n" for row in dump),
               # the stop fell after the evaluation's first dialogues reached heldout.jsonl, before its row
               "heldout.jsonl": json.dumps({**dump[0], "slot": [0, 0, 0], "phase": "train"}) + "\n"}
    # the stop in step 4, after its checkpoint: verl's new log holds step 3's row, not step 4's
    unlogged = {"checkpoints/latest_checkpointed_iteration.txt": "4",
                **{f"checkpoints/global_step_{step}/{name}": "" for step in (2, 4) for name in ("data.pt", "actor/w")},
                "verl_metrics.jsonl": json.dumps(verl_log[2]) + "\n"}
    proc = subprocess.run([sys.executable, "-c", RESUME_PROBE, str(out), json.dumps(stopped), json.dumps(unlogged)],
                          capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    probe = json.loads(proc.stdout.strip().splitlines()[-1])
    (kept, redone, caught_up, gone_back), first = probe["metrics"], probe["launched"][0]
    assert f"trainer.resume_from_path={(out / 'checkpoints' / 'global_step_0').resolve()}" in first
    assert "trainer.val_before_train=True" in first  # the step-0 evaluation it had not finished
    assert kept == [cold]
    assert [row["cold_start/steps"] for row in redone] == [-1]  # no hand-over: the cold start ran again
    assert [(row["step"], row["phase"]) for row in caught_up] == [(0, "cold_start"), (1, "train"), (2, "train"),
                                                                  (2, "heldout")]
    assert caught_up[3]["eval/dialogues"] == 2 and caught_up[3]["time/eval_s"] == 7.0
    step_2 = f"trainer.resume_from_path={(out / 'checkpoints' / 'global_step_2').resolve()}"
    assert step_2 in probe["launched"][2]  # step 3 runs again in verl, not from its old row
    # back to step 2's checkpoint, not verl's latest: steps 3 and 4 run again, each logged once
    assert step_2 in probe["launched"][3] and "trainer.val_before_train=False" in probe["launched"][3]
    assert gone_back == caught_up
    held = [json.loads(line) for line in (out / "heldout.jsonl").read_text().splitlines()]
    assert [(row["step"], row["slot"]) for row in held] == [(2, [0, 0, 0]), (2, [0, 0, 1])]


@pytest.mark.serial
def test_a_run_whose_judge_is_down_stops_with_the_failure_guard_and_a_resumable_checkpoint(tmp_path):
    out = tmp_path / "down"
    down = ["reward.reward_kwargs.backend=llm", "+reward.reward_kwargs.base_url=http://127.0.0.1:9/v1",
            "+reward.reward_kwargs.model=pearl-judge", "+reward.reward_kwargs.timeout_s=2",
            "+reward.reward_kwargs.max_retries=0"]
    proc = _run(["train-local", "--out-dir", str(out), "--steps", "10", *SMALL, "--cold-start-steps", "0",
                 "--eval-problems", "0", "--save-every", "10", *down], expect=1)
    error = proc.stderr.strip().splitlines()[-1]
    assert error.startswith("error: pearl/judge/failure_rate stayed above 0.5 for 3 consecutive steps"), error
    assert "rerun with --resume" in error and "the judge" in error
    assert "reward.reward_kwargs.base_url=http://127.0.0.1:9/v1" in error  # where to look, not only which key
    # the failure guard stopped verl's trainer itself (the suite's one main_ppo run with the judge down)
    log = (out / "train.log").read_text()
    assert "TrainingStalled" in log and "pearl/judge/failure_rate stayed above 0.5 for 3 consecutive steps" in log
    rows = _metrics(out)
    assert [r["step"] for r in rows if "reward/mean" in r] == [1, 2, 3]  # stopped at the third step, not the tenth
    assert all(r["pearl/judge/failure_rate"] == 1.0 for r in rows if "reward/mean" in r)
    assert (out / "checkpoints" / "global_step_3" / "actor").is_dir()


def test_bf16_is_chosen_only_where_it_is_faster(monkeypatch, capsys):
    import torch

    from pearl_verl.train_local import precision, train
    from pearl_verl.train_local.precision import precision_overrides, resolve_dtype

    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX2")  # kernels capped, whatever the CPU
    assert not precision.cpu_has_native_bf16()
    monkeypatch.setattr(precision, "cpu_has_native_bf16", lambda: True)
    assert resolve_dtype("auto", model="smollm2") == torch.bfloat16
    assert resolve_dtype("auto", model="tiny") == torch.float32
    assert resolve_dtype("auto", model="tiny", role="train") == torch.bfloat16
    assert resolve_dtype("float32", model="smollm2") == torch.float32
    assert precision.train_overrides("auto") == []  # verl's bf16 autocast, where the CPU has it
    monkeypatch.setattr(precision, "cpu_has_native_bf16", lambda: False)
    assert resolve_dtype("auto", model="smollm2") == torch.float32
    assert resolve_dtype("auto", model="smollm2", role="train") == torch.float32
    assert precision.train_overrides("bfloat16") == []
    with pytest.raises(ValueError, match="rollout_dtype='fp8' must be one of"):
        train.LocalTrainConfig(rollout_dtype="fp8")
    with pytest.raises(ValueError, match="train_dtype='half' must be one of"):
        train.LocalTrainConfig(train_dtype="half")
    # verl's FSDP engine autocasts to bf16 unless mixed_precision says float32
    fp32 = "mixed_precision={param_dtype:fp32,reduce_dtype:fp32,buffer_dtype:fp32}"
    assert precision_overrides("float32") == [f"+actor_rollout_ref.actor.fsdp_config.{fp32}"]
    assert precision_overrides("float32", "engine") == [f"+engine.{fp32}"]  # verl's SFT trainer's engine
    assert precision_overrides("bfloat16") == []
    # train-local and the CPU recipe (python -m pearl_verl.train_local.precision) resolve "auto" alike
    assert train.train_precision(train.LocalTrainConfig()) == precision.train_overrides("auto")
    assert precision.main(["auto"]) == 0
    assert capsys.readouterr().out.split() == [f"+actor_rollout_ref.actor.fsdp_config.{fp32}"]


@pytest.mark.parametrize(("model", "micro_batch", "batch_problems", "group_size", "expected"), [
    ("tiny", None, 2, 4, 8),  # a tiny model's whole step fits one pass
    ("smollm2", None, 2, 4, 2),  # a 49k vocabulary's logits over 8 dialogues did not fit 24 GB
    ("smollm2", None, 1, 3, 1),  # verl splits a step into equal micro-batches
    ("smollm2", 4, 2, 4, 4),
])
def test_the_update_runs_in_micro_batches_that_fit_the_model(model, micro_batch, batch_problems, group_size, expected):
    from pearl_verl.train_local.local_config import LocalTrainConfig
    from pearl_verl.train_local.train import algorithm_overrides

    config = LocalTrainConfig(model=model, micro_batch=micro_batch, batch_problems=batch_problems,
                              group_size=group_size)
    ours = dict(o.split("=", 1) for o in algorithm_overrides(config))
    assert ours["actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu"] == str(expected)
    assert ours["actor_rollout_ref.actor.ppo_mini_batch_size"] == str(batch_problems)  # still one update a step


def test_a_micro_batch_that_does_not_divide_the_step_is_refused(tmp_path, capsys):
    from pearl_verl import cli

    assert cli.main(["train-local", "--out-dir", str(tmp_path / "run"), "--micro-batch", "3"]) == 2
    err = capsys.readouterr().err
    assert "error: micro_batch=3 must divide the step's 16 sequences" in err
    assert not (tmp_path / "run").exists()


def test_rollout_vllm_runs_verls_own_vllm_rollout_with_the_cpu_settings(tmp_path):
    from pearl_verl.train_local.verl_run import rl_overrides

    common = dict(out=tmp_path, policy=tmp_path / "p", data=tmp_path / "d", steps=2, save_freq=1, start="disable",
                  judge="offline", rollout_dtype="float32")
    vllm, hf = rl_overrides(**common, rollout="vllm"), rl_overrides(**common)
    assert "actor_rollout_ref.rollout.name=vllm" in vllm and "actor_rollout_ref.rollout.name=hf" in hf
    assert set(vllm) - set(hf) == {"actor_rollout_ref.rollout.name=vllm", "+parts=vllm_cpu"}
    proc = _run(["train-local", "--out-dir", str(tmp_path / "x"), "--rollout", "sglang"], expect=2)
    assert "--rollout" in proc.stderr and "'hf', 'vllm'" in proc.stderr
