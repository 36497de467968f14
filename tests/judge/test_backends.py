"""One table of judge backends (``judge.backends.JUDGE_BACKENDS``): every command's choices, the config's and the
one-turn check's derive from it, and a CPU judge is never named as the paper's judge."""

import re

import pytest

from pearl_verl import cli
from pearl_verl.errors import InputError
from pearl_verl.judge.backends import JUDGE_BACKENDS, judge_backends
from pearl_verl.judge.judge_config import JudgeConfig, build_judge, judge_config_from_mapping
from pearl_verl.judge.one_turn import ONE_TURN_BACKENDS
from pearl_verl.judge.probe import PROBES
from pearl_verl.train_local.local_config import LocalTrainConfig

CRITERIA = judge_backends(scores_criteria=True)
ON_CPU = judge_backends(needs_endpoint=False)


def _choices(capsys, argv: list[str], flag: str) -> tuple[str, ...]:
    with pytest.raises(SystemExit):
        cli.main([*argv, "--help"])
    found = re.search(rf"{flag} \{{([^}}]+)\}}", capsys.readouterr().out)
    assert found, f"{argv} has no {flag} with choices"
    return tuple(found.group(1).split(","))


@pytest.mark.parametrize(("argv", "flag", "expected"), [
    (["judge"], "--backend", tuple(JUDGE_BACKENDS)),
    (["judge-check"], "--backend", tuple(JUDGE_BACKENDS)),
    (["eval-tutor"], "--judge", (*CRITERIA, "none")),
    (["eval-rm"], "--judge", CRITERIA),
    (["gen-sft"], "--judge-backend", ("none", *CRITERIA)),
    (["train-local"], "--judge", ON_CPU),
])
def test_each_commands_choices_are_the_tables(capsys, argv, flag, expected):
    assert _choices(capsys, argv, flag) == expected


def test_the_configs_and_the_one_turn_checks_choices_are_the_tables():
    assert JudgeConfig.CHOICES["backend"] == tuple(JUDGE_BACKENDS)
    assert LocalTrainConfig.CHOICES["judge"] == ON_CPU
    assert ONE_TURN_BACKENDS == CRITERIA
    assert set(PROBES) <= set(JUDGE_BACKENDS) - set(CRITERIA)  # the probes score no criteria
    assert "llm" in CRITERIA and "llm" not in ON_CPU and {"fitted", "offline"} <= set(CRITERIA) & set(ON_CPU)


def test_every_cpu_judge_that_scores_the_rubric_is_named_for_what_it_is():
    for name in set(CRITERIA) & set(ON_CPU):
        backend = JUDGE_BACKENDS[name]
        assert "not the paper's judge" in backend.note.lower() and "not the paper's judge" in backend.label.lower(), name
    assert JUDGE_BACKENDS["llm"].label is None and JUDGE_BACKENDS["llm"].note is None


def test_each_name_builds_its_own_judge_and_an_endpoint_backend_asks_for_one():
    built = {name: type(build_judge(JudgeConfig(backend=name))).__name__ for name in ON_CPU}
    assert built == {"fitted": "FittedJudge", "offline": "HeuristicJudge",
                     **dict.fromkeys(PROBES, "ProbeJudge")}
    with pytest.raises(InputError, match="needs base_url and model .* or backend=fitted or offline on a CPU"):
        judge_config_from_mapping({"backend": "llm"})
    with pytest.raises(InputError, match="backend"):
        judge_config_from_mapping({"backend": "fitted-v2"})
