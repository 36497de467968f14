"""How train-local follows verl's main_ppo: its file logger's rows, read while verl writes them."""

import json
import math

from pearl_verl.dims import DIMENSIONS
from pearl_verl.train_local.verl_run import _follow, latest_checkpoint, step_row


def _verl_row(step, **data):
    return {"step": step, "data": data}


def test_a_training_row_gets_the_mean_judge_reward_and_validation_rows_are_skipped():
    dims = {f"pearl/reward/{d}/mean": k / 10 for k, d in enumerate(DIMENSIONS)}
    row = step_row(_verl_row(3, **dims, **{"actor/pg_loss": 0.5}))
    assert row["step"] == 3 and row["phase"] == "train" and row["actor/pg_loss"] == 0.5
    assert math.isclose(row["reward/mean"], sum(range(8)) / 80)
    assert step_row(_verl_row(3, **{"val-aux/mathdial/reward/mean@1": 0.4})) is None
    # a step in which the judge scored nothing logs no per-dimension mean: no reward, not a 0
    missing = step_row(_verl_row(4, **{"pearl/judge/failure_rate": 1.0}))
    assert math.isnan(missing["reward/mean"]) and missing["pearl/judge/failure_rate"] == 1.0


def test_a_line_verl_is_still_writing_waits_for_the_next_look(tmp_path):
    path = tmp_path / "verl_metrics.jsonl"
    seen_rows = []
    assert _follow(path, 0, seen_rows.append) == 0  # not written yet
    first = json.dumps(_verl_row(1, **{"pearl/judge/failure_rate": 0.0}))
    second = json.dumps(_verl_row(2, **{"pearl/judge/failure_rate": 0.0}))
    path.write_text(first + "\n" + second[:20])
    seen = _follow(path, 0, seen_rows.append)
    assert seen == 1 and [r["step"] for r in seen_rows] == [1]
    path.write_text(first + "\n" + second + "\n")
    assert _follow(path, seen, seen_rows.append) == 2 and [r["step"] for r in seen_rows] == [1, 2]


def test_the_latest_checkpoint_is_verls_marker(tmp_path):
    assert latest_checkpoint(tmp_path) == 0
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "checkpoints" / "latest_checkpointed_iteration.txt").write_text("7\n")
    assert latest_checkpoint(tmp_path) == 7
