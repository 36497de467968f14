"""The smoke run's verdict: every step logged what a real run needs, and the weights changed."""

import json

import torch
from safetensors.torch import save_file

from pearl_verl.verl_plugin.smoke import main, metric_checks, weights_check

STEP = {"pearl/reward/acc/mean": 0.5, "pearl/advantage/mean": 0.0, "pearl/judge/failure_rate": 0.0,
        "actor/pg_loss": -0.01, "perf/throughput": 812.0, "actor/grad_norm": 0.3}


def _metrics(path, steps):
    path.write_text("".join(json.dumps({"step": i + 1, "data": data}) + "\n" for i, data in enumerate(steps)))
    return path


def _model(folder, scale):
    folder.mkdir(parents=True)
    save_file({"w": torch.ones(2, 2) * scale, "b": torch.zeros(2)}, str(folder / "model.safetensors"))
    return folder


def test_a_complete_run_passes(tmp_path, capsys):
    metrics = _metrics(tmp_path / "m.jsonl", [STEP] * 3)
    initial = _model(tmp_path / "init", 1.0)
    _model(tmp_path / "ck" / "global_step_3" / "actor" / "huggingface", 1.5)
    code = main(["check", "--metrics", str(metrics), "--initial", str(initial), "--checkpoints", str(tmp_path / "ck")])
    out = capsys.readouterr().out
    assert code == 0 and "smoke run passed" in out and "1 of 2 tensors changed after 3 steps" in out


def test_a_missing_metric_names_the_step_and_a_dead_judge_is_caught(tmp_path):
    no_loss = {k: v for k, v in STEP.items() if k != "actor/pg_loss"}
    dead_judge = {**STEP, "pearl/judge/failure_rate": 1.0}
    checks = {c.name: c for c in metric_checks(_metrics(tmp_path / "m.jsonl", [STEP, no_loss, dead_judge]), 3)}
    assert checks["training steps logged"].ok and checks["pearl/reward/*"].ok
    loss = checks["GSPO loss (actor/pg_loss)"]
    assert not loss.ok and "missing at step(s) [2]" in loss.detail
    assert not checks["judge answered"].ok
    short = {c.name: c for c in metric_checks(_metrics(tmp_path / "s.jsonl", [STEP]), 3)}
    assert not short["training steps logged"].ok and short["training steps logged"].detail == "1 of 3"
    resumed = tmp_path / "r.jsonl"  # a run resumed from its step-2 checkpoint logs step 3 alone
    resumed.write_text(json.dumps({"step": 3, "data": STEP}) + "\n")
    resumed_check = {c.name: c for c in metric_checks(resumed, 3)}["training steps logged"]
    assert resumed_check.ok and resumed_check.detail == "steps 3-3 (resumed after step 2)"
    assert not {c.name: c for c in metric_checks(resumed, 4)}["training steps logged"].ok  # step 4 missing
    (missing,) = metric_checks(tmp_path / "none.jsonl", 3)
    assert not missing.ok and "was not written" in missing.detail


def test_unchanged_or_missing_weights_fail(tmp_path):
    initial = _model(tmp_path / "init", 1.0)
    assert "no safetensors" in weights_check(initial, tmp_path / "ck", 3).detail
    _model(tmp_path / "ck" / "global_step_3" / "actor" / "huggingface", 1.0)
    same = weights_check(initial, tmp_path / "ck", 3)
    assert not same.ok and same.detail == "0 of 2 tensors changed after 3 steps"
