"""Judge fields (reward_extra_info) -> estimator inputs, with located errors."""

import math

import numpy as np
import pytest
import torch

from pearl_verl.advantage.estimator import AdvantageConfig
from pearl_verl.advantage.inputs import inputs_from_columns, inputs_from_rows

CFG = AdvantageConfig(dims=("acc", "leak"))


def _row(acc=0.9, leak=0.5, **extra):
    return {"acc": acc, "leak": leak, "judge_ok": 1, "completed": 1, "tutor_turns": 4, **extra}


def test_rows_become_tensors_in_dims_order():
    inputs = inputs_from_rows([_row(), _row(acc=0.1, leak=1.0, tutor_turns=7, completed=0)], CFG)
    assert inputs.dim_scores.tolist() == [[0.9, 0.5], [0.1, 1.0]]
    assert inputs.num_turns.tolist() == [4.0, 7.0]
    assert inputs.completed.tolist() == [True, False]
    assert inputs.valid.tolist() == [True, True]
    assert inputs.padding is None


def test_failed_judge_rows_may_hold_none_and_become_invalid():
    inputs = inputs_from_rows([_row(), _row(acc=None, leak=None, judge_ok=0, tutor_turns=None)], CFG)
    assert inputs.valid.tolist() == [True, False]
    assert math.isnan(inputs.dim_scores[1, 0].item())


def test_numpy_and_torch_scalars_are_numbers():
    row = _row(acc=np.float32(0.25), leak=torch.tensor(0.75), tutor_turns=np.int64(3), judge_ok=np.bool_(True))
    inputs = inputs_from_rows([row], CFG)
    assert inputs.dim_scores.tolist() == [[0.25, 0.75]] and inputs.num_turns.tolist() == [3.0]


def test_scored_row_without_a_score_names_row_and_key():
    with pytest.raises(ValueError, match=r"Reward field 'leak' of sample 1 is None, not a number.*judge_ok=0"):
        inputs_from_rows([_row(), _row(leak=None)], CFG)
    with pytest.raises(ValueError, match=r"Reward field 'acc' of line 12 is 'high'"):
        inputs_from_rows([_row(acc="high")], CFG, labels=["line 12"])


def test_missing_dimension_key_explains_the_fix():
    with pytest.raises(ValueError, match=r"lack the dimension key\(s\) \['leak'\].*pearl\.advantage\.dims"):
        inputs_from_rows([{"acc": 0.5, "tutor_turns": 1}], CFG)


def test_turns_are_required_only_when_the_decay_is_on():
    rows = [{"acc": 0.5, "leak": 0.5}]
    with pytest.raises(ValueError, match=r"gamma=0\.98\) needs 'tutor_turns'.*gamma=1\.0"):
        inputs_from_rows(rows, CFG)
    inputs = inputs_from_rows(rows, AdvantageConfig(dims=("acc", "leak"), gamma=1.0))
    # documented defaults: scored, completed
    assert inputs.valid.tolist() == [True] and inputs.completed.tolist() == [True]


def test_padding_rows_are_invalid_and_marked():
    inputs = inputs_from_rows([_row(), {"acc": None}], CFG, padding=[False, True])
    assert inputs.valid.tolist() == [True, False]
    assert inputs.padding.tolist() == [False, True]


def test_columns_from_numpy_object_and_numeric_arrays():
    cols = {
        "acc": np.array([0.5, None], dtype=object),
        "leak": np.array([0.25, 0.5]),
        "judge_ok": np.array([1, 0]),
        "tutor_turns": np.array([3, 4], dtype=np.int32),
    }
    inputs = inputs_from_columns(cols, 2, CFG)
    assert inputs.valid.tolist() == [True, False]
    assert inputs.dim_scores[0].tolist() == [0.5, 0.25]
    assert inputs.num_turns.tolist() == [3.0, 4.0]


def test_column_length_mismatch():
    with pytest.raises(ValueError, match=r"'acc' has 1 values for 2 samples"):
        inputs_from_columns({"acc": [0.1], "leak": [0.2, 0.3], "tutor_turns": [1, 1]}, 2, CFG)


def test_inputs_are_not_mutated():
    row = _row()
    before = dict(row)
    inputs_from_rows([row], CFG)
    assert row == before

