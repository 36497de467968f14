"""One PEARL advantage step for both trainers: the V1 rows and the legacy columns of one batch give one result."""

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

from pearl_verl.advantage.estimator import AdvantageConfig, compute_pearl_advantage
from pearl_verl.dims import DIMENSIONS
from pearl_verl.verl_plugin.advantage_step import pearl_advantage_step, rows_from_columns

UIDS = np.array(["a", "a", "a", "b", "b", "b"], dtype=object)
SCORES = [[0.9] * 8, [0.5] * 8, [None] * 8, [0.7] * 8, [0.7] * 8, [0.1] * 8]
JUDGE_OK = [1, 1, 0, 1, 1, 1]
COMPLETED = [1, 1, 1, 1, 0, 1]
TURNS = [3, 6, 2, 4, 15, 4]
END = ["tutor_ended", "tutor_ended", "student_error", "tutor_ended", "max_turns", "tutor_ended"]


def _v1_rows():
    """What the pearl_tutor agent loop and the reward loop leave in each sample's extra_fields."""
    rows = []
    for i in range(len(UIDS)):
        info = {**dict(zip(DIMENSIONS, SCORES[i], strict=True)), "judge_ok": JUDGE_OK[i],
                "completed": COMPLETED[i], "tutor_turns": TURNS[i], "judge_replies": 1 + i % 2, "judge_unparsed": i % 2}
        rows.append({"reward_extra_info": info, "pearl_end_reason": END[i],
                     "pearl_student_replies": 4, "pearl_student_fallbacks": i % 3})
    return rows


def _legacy_columns(rows):
    """The legacy trainer's non_tensor_batch: every field of every sample a column."""
    flat = [{**{k: v for k, v in row.items() if k != "reward_extra_info"}, **row["reward_extra_info"]} for row in rows]
    return {key: np.array([row[key] for row in flat], dtype=object) for key in flat[0]}


def _step(extras, padding=None):
    metrics = {}
    algorithm = OmegaConf.create({"adv_estimator": "pearl"})
    scalar = pearl_advantage_step(algorithm, AdvantageConfig(gamma=0.9), UIDS, extras, metrics, padding=padding)
    return scalar, metrics


def test_the_v1_rows_and_the_legacy_columns_of_one_batch_give_the_same_advantages_and_metrics():
    rows = _v1_rows()
    v1, v1_metrics = _step(rows)
    legacy, legacy_metrics = _step(rows_from_columns(_legacy_columns(rows), len(rows)))
    scores = torch.tensor([[np.nan if s is None else s for s in row] for row in SCORES], dtype=torch.float64)
    want = compute_pearl_advantage(scores, TURNS, [bool(c) for c in COMPLETED], list(UIDS), gamma=0.9,
                                   valid=[bool(ok) for ok in JUDGE_OK])
    torch.testing.assert_close(v1, want.float())
    torch.testing.assert_close(legacy, v1)
    assert legacy_metrics == v1_metrics
    assert v1_metrics["pearl/failure/student_rate"] == pytest.approx(1 / 6)  # the flagged one ended in student_error
    assert v1_metrics["pearl/failure/judge_rate"] == 0
    assert v1_metrics["pearl/judge/parse_failure_rate"] == pytest.approx(3 / 9)
    assert v1_metrics["pearl/student/fallback_rate"] == pytest.approx(6 / 24)


def test_padding_rows_count_in_no_metric_and_get_no_advantage():
    rows = _v1_rows()
    pad = [False, False, False, False, False, True]
    scalar, metrics = _step(rows, padding=pad)
    assert scalar[5] == 0
    assert metrics["pearl/failure/student_rate"] == pytest.approx(1 / 5)
    assert metrics["pearl/student/fallback_rate"] == pytest.approx(4 / 20)


def test_legacy_rows_put_only_the_named_columns_under_reward_extra_info():
    rows = _v1_rows()
    columns = _legacy_columns(rows)
    dumped = rows_from_columns(columns, len(rows), info_keys=["judge_ok", "absent"])
    assert dumped[2]["reward_extra_info"] == {"judge_ok": 0}
    assert dumped[2]["pearl_end_reason"] == "student_error"
