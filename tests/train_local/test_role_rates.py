"""train-local names a served student that mostly fell back, and a served judge whose replies did not parse."""

import json

import pytest

from pearl_verl.train_local.role_rates import role_lines, role_rates, role_verdict, served_roles, student_mode
from pearl_verl.train_local.runtime import compose_verl_config

STEPS = [
    {"step": 0, "phase": "initial", "eval/reward/mean": 0.1},  # an evaluation row logs neither rate
    {"step": 1, "reward/mean": 0.2, "pearl/student/fallback_rate": 0.5, "pearl/judge/parse_failure_rate": 0.25},
    {"step": 2, "reward/mean": 0.3, "pearl/student/fallback_rate": 0.9, "pearl/judge/parse_failure_rate": 0.0},
]


def test_the_roles_served_are_read_from_the_composed_config():
    assert served_roles(compose_verl_config([])) == () and student_mode(compose_verl_config([])) is None
    student = ["+pearl.student.backend=llm", "+pearl.student.base_url=http://127.0.0.1:9/v1", "+pearl.student.model=s"]
    served = compose_verl_config([*student, "+reward.reward_kwargs.backend=llm"])
    assert served_roles(served) == ("student", "judge")
    pinned = compose_verl_config([*student, "+pearl.student.structured_output=json_object"])
    assert student_mode(pinned) == "json_object"


def test_rates_lines_and_verdict_over_the_training_steps():
    rates = role_rates(STEPS, ("student", "judge"))
    assert rates["student"] == {"mean": pytest.approx(0.7), "max": 0.9, "steps": 2}
    assert rates["judge"] == {"mean": pytest.approx(0.125), "max": 0.25, "steps": 2}
    assert role_lines(rates) == [
        "student replies that fell back to the rules: 70% over 2 training steps (worst step 90%)",
        "judge replies that did not parse: 12% over 2 training steps (worst step 25%)",
    ]
    verdict = role_verdict(rates, 0.5)
    assert verdict.startswith("error: 70% of the student replies fell back to the rules (above --max-fallback-rate 0.5")
    assert "pearl.student.structured_output=json_object" in verdict
    assert role_verdict(rates, 0.75) is None
    assert role_verdict(rates, 0.5, "json_object").endswith(  # the server already held it to a JSON mode
        "does not follow the format even with json_object structured output; use a stronger model")
    assert role_rates(STEPS, ("judge",)).keys() == {"judge"}  # an offline student logs 0s: not reported
    assert role_lines(role_rates(STEPS, ())) == [] and role_verdict({}, 0.0) is None


def test_train_local_prints_the_rates_and_exits_1_above_the_threshold(tmp_path, monkeypatch, capsys):
    from pearl_verl import cli
    from pearl_verl.train_local import train

    def fake_training(config, resume, progress_file, extra_overrides):
        """What run_training leaves for the command: config.json with the served roles, summary.txt, rows."""
        out = tmp_path / "run"
        out.mkdir(exist_ok=True)
        (out / "config.json").write_text(json.dumps({"served_roles": ["student", "judge"]}))
        train._write_summary(out, [], STEPS, ("student", "judge"))
        return STEPS

    monkeypatch.setattr(train, "run_training", fake_training)
    assert cli.main(["train-local", "--out-dir", str(tmp_path / "run")]) == 1
    captured = capsys.readouterr()
    assert "student replies that fell back to the rules: 70% over 2 training steps" in captured.out
    assert "judge replies that did not parse: 12%" in captured.out
    assert "error: 70% of the student replies fell back to the rules" in captured.err
    assert cli.main(["train-local", "--out-dir", str(tmp_path / "run"), "--max-fallback-rate", "0.8"]) == 0
