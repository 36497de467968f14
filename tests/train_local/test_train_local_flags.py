"""train-local's settings: each number's range is declared once (``LocalTrainConfig.RANGES``), shown
in ``--help`` and checked before any work, with one ``error:`` line naming the setting."""

import dataclasses
import math

import pytest

from pearl_verl import cli
from pearl_verl.errors import InputError
from pearl_verl.ranges import Range
from pearl_verl.train_local.local_config import LocalTrainConfig

POSITIVE_FRACTION = "a finite number greater than 0 and at most 1"
BAD = [
    ("--lr", "-1", f"{POSITIVE_FRACTION}, or null"),
    ("--lr", "nan", f"{POSITIVE_FRACTION}, or null"),
    ("--cold-start-lr", "inf", f"{POSITIVE_FRACTION}, or null"),
    ("--cold-start-steps", "-1", "a whole number from 0 to"),
    ("--temperature", "-1", "a finite number greater than 0 and at most 10"),
    ("--temperature", "0", "a finite number greater than 0 and at most 10"),
    ("--top-k", "-1", "a whole number from 0 to"),
    ("--response-length", "-1", "a whole number from 1 to"),
    ("--eval-problems", "-3", "a whole number from 0 to"),
    ("--cold-start-dialogues", "0", "a whole number from 1 to"),
    ("--gamma", "1.5", f"{POSITIVE_FRACTION} (the per-turn decay factor"),
    ("--group-size", "1", "a whole number from 2 to 1,000,000,000 (advantages compare dialogues"),
    ("--micro-batch", "0", "a whole number from 1 to 1,000,000,000, or null"),
]


@pytest.mark.parametrize(("flag", "value", "allowed"), BAD)
def test_a_value_out_of_range_is_one_error_line_naming_the_flag_before_any_work(tmp_path, capsys, flag, value,
                                                                               allowed):
    out = tmp_path / "run"
    with pytest.raises(SystemExit) as exited:
        cli.main(["train-local", "--out-dir", str(out), flag, value])
    assert exited.value.code == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert len(errors) == 1 and f"error: argument {flag}: got {value}; allowed: {allowed}" in errors[0], errors
    assert not out.exists()


@pytest.mark.parametrize(("field", "value", "message"), [
    ("lr", -1.0, f"lr=-1.0: {POSITIVE_FRACTION}, or null"),
    ("gamma", float("nan"), f"gamma=nan: {POSITIVE_FRACTION}"),
    ("group_size", 1, "group_size=1: a whole number from 2 to"),
    ("steps", "20", 'steps="20": a whole number from 1 to'),
])
def test_the_same_ranges_hold_for_a_config_built_in_python(field, value, message):
    with pytest.raises(InputError, match=message.replace("(", r"\(")):
        LocalTrainConfig(**{field: value})


def test_an_out_dir_that_is_a_file_is_refused(tmp_path, capsys):
    file = tmp_path / "notes.txt"
    file.write_text("mine")
    with pytest.raises(SystemExit) as exit_info:  # while parsing: the flag's output-path type
        cli.main(["train-local", "--out-dir", str(file)])
    assert exit_info.value.code == 2
    assert f"argument --out-dir: {file} is a file; give a folder." in capsys.readouterr().err
    assert file.read_text() == "mine"
    with pytest.raises(InputError, match="is a file; the run's folder must be a directory"):  # built in code
        LocalTrainConfig(out_dir=str(file))


@pytest.mark.parametrize(("given", "says"), [("", "problems_file='' names no file"),
                                             ("/dev/null", "problems_file is not a regular file"),
                                             ("nope.jsonl", "nope.jsonl: problems_file does not exist")])
def test_a_problems_file_that_is_no_file_is_refused_not_replaced_by_the_fixture(tmp_path, capsys, given, says):
    assert cli.main(["train-local", "--out-dir", str(tmp_path / "run"), "--problems-file", given]) == 2
    assert says in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_every_number_setting_has_a_declared_range_shown_in_help(capsys):
    numbers = {f.name for f in dataclasses.fields(LocalTrainConfig) if f.type in ("int", "float", "int | None", "float | None")}
    assert numbers == set(LocalTrainConfig.RANGES)
    with pytest.raises(SystemExit):
        cli.main(["train-local", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert help_text.count("Allowed: ") == len(numbers) + 1  # and the student's --max-fallback-rate


@pytest.mark.parametrize("value", [True, float("nan"), math.inf, "abc", [1]])
def test_a_range_admits_only_finite_numbers(value):
    with pytest.raises(InputError, match="x="):
        Range(float, low=0).check("x", value)
    assert Range(float, low=0, low_open=True, high=1).check("x", 1) == 1
    with pytest.raises(InputError, match=r"x=0: a finite number greater than 0"):
        Range(float, low=0, low_open=True, high=1).check("x", 0)


def test_a_config_built_in_code_is_checked_the_same_way():
    with pytest.raises(InputError, match=r"steps=0: a whole number from 1 to"):
        LocalTrainConfig(steps=0)


def test_a_range_may_leave_out_its_upper_end():
    share = Range(float, low=0, high=1, high_open=True)
    assert share.check("val_fraction", 0.999) == 0.999 and share.check("val_fraction", 0) == 0
    with pytest.raises(InputError, match=r"^val_fraction=1.0: a finite number at least 0 and less than 1$"):
        share.check("val_fraction", 1.0)
