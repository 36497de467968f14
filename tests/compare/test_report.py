"""The report's math on hand-made votes, and the eval-rm export read by eval-rm itself."""

import json
import statistics

import pytest

from pearl_verl.cli import main
from pearl_verl.compare.pairs import read_pairs
from pearl_verl.compare.tables import build_report, comparisons, export_rows, majority, preference_rows
from pearl_verl.eval.rm import read_pairs as read_rm_pairs
from pearl_verl.stats import t_quantile


def _votes(cx):
    v = cx.vote
    return [
        # pair p1: both prefer a; p2: ann1 tie, ann2 a; p3: both b; p4: ann1 a, ann2 b; p5: only ann1, tie
        v("p1", "ann1", "a", left="a", dims={"leak": "a", "guide": "tie"}),
        v("p1", "ann2", "a", left="b", dims={"leak": "b"}),
        v("p2", "ann1", "tie", left="b"),
        v("p2", "ann2", "a", left="a"),
        v("p3", "ann1", "b", left="b", margin="high"),
        v("p3", "ann2", "b", left="a", margin="high"),
        v("p4", "ann1", "a", left="a"),
        v("p4", "ann2", "b", left="b"),
        v("p5", "ann1", "tie", left="a"),
    ]


def test_win_tie_loss_preference_by_hand(cx):
    markdown, summary = build_report(_votes(cx))
    (row,) = summary["table"]
    # 9 votes for tutor a: wins 4 (p1 x2, p2 ann2, p4 ann1), ties 2 (p2 ann1, p5), losses 3 (p3 x2, p4 ann2)
    assert row["counts"] == {"win": 4, "tie": 2, "loss": 3} and row["n"] == 9 and row["pairs"] == 5
    assert (row["win"], row["tie"], row["loss"]) == pytest.approx((100 * 4 / 9, 100 * 2 / 9, 100 * 3 / 9))
    assert row["preference"]["mean"] == pytest.approx(100 * (4 + 0.5 * 2) / 9)
    scores = [1, 1, 0.5, 1, 0, 0, 1, 0, 0.5]
    half = t_quantile(0.975, 8) * statistics.stdev(scores) / 3
    assert row["preference"]["low"] == pytest.approx(100 * (statistics.fmean(scores) - half))
    assert row["preference"]["high"] == pytest.approx(100 * (statistics.fmean(scores) + half))
    # the paper's table format, two decimals
    assert "| Compared Tutor | Win | Tie | Loss | Preference |" in markdown
    assert f"| {cx.TUTOR_B} | 44.44 | 22.22 | 33.33 | 55.56 |" in markdown
    assert f"## {cx.TUTOR_A} against the compared tutors" in markdown


def test_interval_stays_within_the_scale(cx):
    votes = [cx.vote(f"p{i}", "ann1", outcome) for i, outcome in enumerate(["a", "a", "a", "a", "tie"])]
    (row,) = build_report(votes)[1]["table"]
    scores = [1, 1, 1, 1, 0.5]
    half = t_quantile(0.975, 4) * statistics.stdev(scores) / 5**0.5
    assert statistics.fmean(scores) + half > 1  # the raw t interval would pass 100%
    assert row["preference"]["high"] == 100.0 and row["preference"]["low"] == pytest.approx(100 * (0.9 - half))


def test_focal_flips_the_orientation(cx):
    _, summary = build_report(_votes(cx), focal=cx.TUTOR_B)
    (row,) = summary["table"]
    assert (row["focal"], row["compared"]) == (cx.TUTOR_B, cx.TUTOR_A)
    assert row["counts"] == {"win": 3, "tie": 2, "loss": 4}
    assert row["preference"]["mean"] == pytest.approx(100 * 4 / 9)


def test_majority_unit(cx):
    assert [majority(x) for x in (["a", "a"], ["a", "tie"], ["a", "a", "b"], [])] == ["a", None, "a", None]
    counted, unresolved = comparisons(_votes(cx), "majority")
    # p1 a, p3 b, p5 tie (its one vote is a majority of one); p2 and p4 split
    assert sorted((c.pair_id, c.outcome) for c in counted) == [("p1", "win"), ("p3", "loss"), ("p5", "tie")]
    assert unresolved == 2
    (row,) = preference_rows(counted)
    assert row.preference.mean == pytest.approx(100 * 1.5 / 3)
    with pytest.raises(ValueError, match="unit='pair' must be one of"):
        comparisons(_votes(cx), "pair")


def test_agreement_dimensions_and_position(cx):
    markdown, summary = build_report(_votes(cx))
    (pairwise,) = summary["agreement"]["pairwise"]
    # shared pairs p1..p4: ann1 a, tie, b, a; ann2 a, a, b, b -> p_o = 2/4
    # ann1: a 2, tie 1, b 1; ann2: a 2, b 2 -> p_e = (2*2 + 1*0 + 1*2) / 16 = 6/16
    assert pairwise["pairs"] == 4 and pairwise["agreement"] == pytest.approx(0.5)
    assert pairwise["cohen_kappa"] == pytest.approx((0.5 - 6 / 16) / (1 - 6 / 16))
    assert summary["agreement"]["fleiss_kappa"] is None  # two annotators: Cohen only
    leak = next(r for r in summary["dimensions"] if r["dim"] == "leak")
    guide = next(r for r in summary["dimensions"] if r["dim"] == "guide")
    assert (leak["win"], leak["loss"], leak["n"], leak["preference"]) == (1, 1, 2, 50.0)
    assert (guide["tie"], guide["n"], guide["preference"]) == (1, 1, 50.0)
    assert "Answer-leakage control" in markdown
    # 7 decided votes; 5 chose the left one: p1 ann1 (a, left a), p2 ann2 (a, a), p3 ann1 (b, b), p4 ann1 (a, a),
    # p4 ann2 (b, b); p1 ann2 and p3 ann2 chose the right one
    assert summary["left_chosen"]["mean"] == pytest.approx(5 / 7) and summary["left_chosen"]["n"] == 7


def test_fleiss_with_three_annotators(cx):
    v = cx.vote
    votes = [v("p1", "x", "a"), v("p1", "y", "a"), v("p1", "z", "a"), v("p2", "x", "a"), v("p2", "y", "a"),
             v("p2", "z", "b")]  # fmt: skip
    _, summary = build_report(votes)
    assert summary["agreement"]["fleiss_kappa"] == pytest.approx(-0.2)  # the hand example of test_agreement
    assert len(summary["agreement"]["pairwise"]) == 3


def test_no_votes_is_an_error():
    with pytest.raises(ValueError, match="no votes yet"):
        build_report([])


def test_export_is_what_eval_rm_reads(cx, eval_run, tmp_path):
    pairs_file = tmp_path / "pairs.jsonl"
    assert main(["compare", "build-pairs", str(eval_run), "--out", str(pairs_file)]) == 0
    assert {json.loads(line)["row_kind"] for line in pairs_file.read_text().splitlines()} == {"comparison_pair"}
    pairs = read_pairs(pairs_file)
    ids = [p.pair_id for p in pairs]
    v = cx.vote
    votes = [v(ids[0], "ann1", "b"), v(ids[0], "ann2", "b"), v(ids[1], "ann1", "a"), v(ids[1], "ann2", "tie"),
             v(ids[2], "ann1", "a"), v(ids[2], "ann2", "a")]  # fmt: skip
    rows, skipped = export_rows(votes, pairs)
    assert [(r["id"], r["preferred"]) for r in rows] == [(ids[0], "b"), (ids[2], "a")]
    assert skipped == {"no majority": 1}
    by_id = {p.pair_id: p for p in pairs}
    assert all(r["margin"] == by_id[r["id"]].margin and r["a"] == by_id[r["id"]].a.to_dict() for r in rows)
    per_vote, skipped_votes = export_rows(votes, pairs, "annotator")
    assert [r["id"] for r in per_vote] == [f"{ids[0]}|ann1", f"{ids[0]}|ann2", f"{ids[1]}|ann1", f"{ids[2]}|ann1",
                                            f"{ids[2]}|ann2"]  # fmt: skip
    assert skipped_votes == {"tie": 1}
    export = tmp_path / "human.jsonl"
    export.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert [p.preferred for p in read_rm_pairs(export)] == ["b", "a"]
    # eval-rm scores the export with the run's own (offline) judge: it agrees where its score order matches
    out = tmp_path / "rm"
    code = main(["eval-rm", str(export), "--rm", "judge", "--judge", "offline", "--out", str(out)])
    assert code == 0
    summary = json.loads((out / "rm_summary.json").read_text())
    agree = [(by_id[r["id"]].score_a > by_id[r["id"]].score_b) == (r["preferred"] == "a") for r in rows]
    assert summary["overall"]["mean"] == pytest.approx(sum(agree) / len(agree)) and summary["overall"]["n"] == 2
    unmargined = [p.__class__(**{**p.__dict__, "margin": None}) for p in pairs]
    with pytest.raises(ValueError, match="does not hold"):
        export_rows([v("unknown", "ann1", "a")], pairs)
    assert export_rows(votes, unmargined)[1] == {"no margin bucket": 2, "no majority": 1}
