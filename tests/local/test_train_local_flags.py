"""train-local's settings: each number's range is declared once (``LocalTrainConfig.RANGES``), shown
in ``--help`` and checked before any work, with one ``error:`` line naming the setting."""

import dataclasses
import math

import pytest

from pearl_verl import cli
from pearl_verl.errors import InputError, Range
from pearl_verl.local.config import LocalTrainConfig

BAD = [
    ("--lr", "-1", "lr=-1.0 must be a number in (0, 1]"),
    ("--lr", "nan", "lr=nan must be a number in (0, 1]"),
    ("--cold-start-lr", "inf", "cold_start_lr=inf must be a number in (0, 1]"),
    ("--cold-start-steps", "-1", "cold_start_steps=-1 must be a number >= 0"),
    ("--temperature", "-1", "temperature=-1.0 must be a number in (0, 10]"),
    ("--temperature", "0", "temperature=0.0 must be a number in (0, 10]"),
    ("--response-length", "-1", "response_length=-1 must be a number >= 1"),
    ("--eval-problems", "-3", "eval_problems=-3 must be a number >= 0"),
    ("--cold-start-dialogues", "0", "cold_start_dialogues=0 must be a number >= 1"),
    ("--gamma", "1.5", "gamma=1.5 must be a number in (0, 1]: the per-turn decay factor"),
    ("--group-size", "1", "group_size=1 must be a number >= 2: advantages compare dialogues within a group"),
]


@pytest.mark.parametrize(("flag", "value", "message"), BAD)
def test_a_value_out_of_range_is_one_error_line_before_any_work(tmp_path, capsys, flag, value, message):
    out = tmp_path / "run"
    assert cli.main(["train-local", "--out-dir", str(out), flag, value]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert err == [f"error: {message}."] or (len(err) == 1 and err[0].startswith(f"error: {message}")), err
    assert not out.exists()


def test_an_out_dir_that_is_a_file_is_refused(tmp_path, capsys):
    file = tmp_path / "notes.txt"
    file.write_text("mine")
    assert cli.main(["train-local", "--out-dir", str(file)]) == 2
    assert "is a file; the run's folder must be a directory" in capsys.readouterr().err
    assert file.read_text() == "mine"


def test_every_number_setting_has_a_declared_range_shown_in_help(capsys):
    numbers = {f.name for f in dataclasses.fields(LocalTrainConfig) if f.type in ("int", "float", "float | None")}
    assert numbers == set(LocalTrainConfig.RANGES)
    with pytest.raises(SystemExit):
        cli.main(["train-local", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert help_text.count("Allowed: ") == len(numbers)


@pytest.mark.parametrize("value", [True, float("nan"), math.inf, "3", None])
def test_a_range_admits_only_finite_numbers(value):
    assert not Range(0).admits(value)
    assert Range(0, 1, low_open=True).admits(1) and not Range(0, 1, low_open=True).admits(0)


def test_a_config_built_in_code_is_checked_the_same_way():
    with pytest.raises(InputError, match=r"steps=0 must be a number >= 1"):
        LocalTrainConfig(steps=0)
