"""compare build-pairs: pairs from eval-tutor results, margins from the judge, sampling, bad input."""

import json
import re

import pytest

from pearl_verl.cli import main
from pearl_verl.compare.pairs import build_pairs, margin_bucket, read_pairs, tutor_pairs
from pearl_verl.dims import DIMENSIONS


def _results(cx, eval_run):
    return cx.read_jsonl(eval_run / "results.jsonl")


def test_pairs_hold_both_tutors_dialogues_of_each_item(cx, eval_run, tmp_path, capsys):
    out = tmp_path / "pairs.jsonl"
    assert main(["compare", "build-pairs", str(eval_run), "--out", str(out)]) == 0
    assert f"{out}: 3 pairs" in capsys.readouterr().out
    rows = {(r["tutor"], r["item_id"]): r for r in _results(cx, eval_run)}
    pairs = read_pairs(out)
    assert sorted(p.item_id for p in pairs) == sorted({item for _, item in rows})
    for pair in pairs:
        assert (pair.tutor_a, pair.tutor_b) == (cx.TUTOR_A, cx.TUTOR_B)  # the manifest's tutor order
        row_a, row_b = rows[(cx.TUTOR_A, pair.item_id)], rows[(cx.TUTOR_B, pair.item_id)]
        assert pair.a.to_dict() == row_a["episode"] and pair.b.to_dict() == row_b["episode"]
        assert pair.pair_id == f"pearl|{pair.item_id}|{cx.TUTOR_A}-vs-{cx.TUTOR_B}"
        hand_a = 100 * sum(row_a["judge"][d] for d in DIMENSIONS) / 8
        hand_b = 100 * sum(row_b["judge"][d] for d in DIMENSIONS) / 8
        assert pair.score_a == pytest.approx(hand_a) and pair.score_b == pytest.approx(hand_b)
        gap = abs(hand_a - hand_b)
        assert pair.margin == ("low" if gap < 5 else "medium" if gap < 15 else "high")


def test_margin_edges_are_configurable(cx, eval_run, tmp_path):
    gaps = []
    for pair in read_pairs(_build(eval_run, tmp_path, "--margins", "0,1000")):
        gaps.append(abs(pair.score_a - pair.score_b))
        assert pair.margin == "medium"  # every gap lies in [0, 1000)
    smallest = min(gaps)
    edges = f"{smallest + 1e-6},{smallest + 2e-6}"
    margins = [p.margin for p in read_pairs(_build(eval_run, tmp_path, "--margins", edges))]
    assert margins.count("low") == sum(g < smallest + 1e-6 for g in gaps) >= 1
    assert all(p.margin is None for p in read_pairs(_build(eval_run, tmp_path, "--no-margins")))


def _build(eval_run, tmp_path, *flags):
    out = tmp_path / "p.jsonl"
    assert main(["compare", "build-pairs", str(eval_run), "--out", str(out), *flags]) == 0
    return out


def test_margin_bucket_edges():
    assert [margin_bucket(g) for g in (0, 4.99, 5, -5, 14.99, 15, 80)] == [
        "low", "low", "medium", "medium", "medium", "high", "high"
    ]  # fmt: skip
    with pytest.raises(ValueError, match=r"0 <= low <= medium"):
        margin_bucket(1.0, (10.0, 5.0))


def test_focal_and_explicit_orientation(cx, eval_run, tmp_path):
    pairs = read_pairs(_build(eval_run, tmp_path, "--focal", cx.TUTOR_B))
    assert {(p.tutor_a, p.tutor_b) for p in pairs} == {(cx.TUTOR_B, cx.TUTOR_A)}
    assert all(p.a.turns[1].text.startswith("The answer is") for p in pairs)  # the leaking double is now a
    assert tutor_pairs(["x", "y", "z"]) == [("x", "y"), ("x", "z"), ("y", "z")]
    assert tutor_pairs(["x", "y", "z"], focal="z") == [("z", "x"), ("z", "y")]
    assert tutor_pairs(["x", "y", "z"], explicit=[("y", "x")]) == [("y", "x")]
    with pytest.raises(ValueError, match=r"tutor 'w' is not in the results; they hold \['x', 'y'\]"):
        tutor_pairs(["x", "y"], focal="w")


def test_sample_is_a_seeded_subset(cx, eval_run, tmp_path):
    full = [p.pair_id for p in read_pairs(_build(eval_run, tmp_path))]
    first = [p.pair_id for p in read_pairs(_build(eval_run, tmp_path, "--sample", "2", "--seed", "7"))]
    again = [p.pair_id for p in read_pairs(_build(eval_run, tmp_path, "--sample", "2", "--seed", "7"))]
    assert len(first) == 2 and first == again and set(first) <= set(full)
    assert first == [p for p in full if p in first]  # the file keeps the run's order


def test_failed_dialogues_and_missing_judge(cx, eval_run):
    rows = _results(cx, eval_run)
    broken = dict(rows[0], error="RuntimeError: backend down")
    unjudged = [dict(r, judge=None) for r in rows if r["item_id"] != rows[0]["item_id"]]
    built = build_pairs([broken, *[r for r in rows if r["id"] != broken["id"]]], [(cx.TUTOR_A, cx.TUTOR_B)])
    assert len(built.pairs) == 2 and built.missing == 1 and rows[0]["item_id"] not in {p.item_id for p in built.pairs}
    no_scores = build_pairs(unjudged, [(cx.TUTOR_A, cx.TUTOR_B)])
    assert len(no_scores.pairs) == 2 and all(p.margin is None and p.score_a is None for p in no_scores.pairs)


def test_mismatched_conditions_name_the_rows(cx, eval_run):
    rows = _results(cx, eval_run)
    first = next(r for r in rows if r["tutor"] == cx.TUTOR_A)
    other = json.loads(
        json.dumps(next(r for r in rows if r["tutor"] == cx.TUTOR_B and r["item_id"] == first["item_id"]))
    )
    other["episode"]["condition"]["seed"] += 1
    expected = f"results '{first['id']}' and '{other['id']}' share item '{first['item_id']}' but not its problem"
    with pytest.raises(ValueError, match=re.escape(expected)):
        build_pairs([first, other], [(cx.TUTOR_A, cx.TUTOR_B)])


def test_bad_inputs_give_clear_errors(cx, eval_run, tmp_path, capsys):
    out = tmp_path / "p.jsonl"
    assert main(["compare", "build-pairs", str(tmp_path / "nowhere"), "--out", str(out)]) == 2
    assert capsys.readouterr().err == f"error: {tmp_path / 'nowhere'}: eval-tutor results file does not exist.\n"
    assert main(["compare", "build-pairs", str(tmp_path), "--out", str(out)]) == 2
    assert capsys.readouterr().err == f"error: {tmp_path}: not an eval-tutor run directory (it has no results.jsonl).\n"
    assert main(["compare", "build-pairs", str(eval_run), "--out", str(out), "--pair", "onlyone"]) == 2
    assert "--pair 'onlyone' must be TUTOR_A,TUTOR_B" in capsys.readouterr().err
    assert main(["compare", "build-pairs", str(eval_run), "--out", str(out), "--margins", "5"]) == 2
    assert "--margins '5' must be two numbers" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    good = (_build(eval_run, tmp_path)).read_text().splitlines()
    bad.write_text(good[0] + "\n" + good[0] + "\n")
    with pytest.raises(ValueError, match=r"bad.jsonl:2: pair id .* appears twice"):
        read_pairs(bad)
    bad.write_text(good[0] + '\n{"pair_id": 1}\n')
    with pytest.raises(ValueError, match=r"bad.jsonl:2: not a comparison pair: no field"):
        read_pairs(bad)


def _run_copy(eval_run, tmp_path, edit):
    """A copy of ``eval_run`` whose results file is rewritten by ``edit(lines) -> text``."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "manifest.json").write_text((eval_run / "manifest.json").read_text(encoding="utf-8"), encoding="utf-8")
    lines = (eval_run / "results.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (run / "results.jsonl").write_text(edit(lines), encoding="utf-8")
    return run


def test_a_corrupt_middle_line_is_a_located_error_not_a_lost_pair(eval_run, tmp_path, capsys):
    run = _run_copy(eval_run, tmp_path, lambda lines: "".join(lines[:1] + [lines[1][:40] + "\n"] + lines[2:]))
    out = tmp_path / "p.jsonl"
    assert main(["compare", "build-pairs", str(run), "--out", str(out)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {run / 'results.jsonl'}:2: ")
    assert not out.exists()


def test_a_final_line_cut_by_a_kill_is_skipped_with_a_warning(eval_run, tmp_path, capsys, caplog):
    run = _run_copy(eval_run, tmp_path, lambda lines: "".join(lines[:-1]) + lines[-1][:40])
    out = tmp_path / "p.jsonl"
    assert main(["compare", "build-pairs", str(run), "--out", str(out)]) == 0
    assert f"{out}: 2 pairs" in capsys.readouterr().out  # the cut dialogue's pair is missing, nothing else
    last = len((eval_run / "results.jsonl").read_text(encoding="utf-8").splitlines())
    (warning,) = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warning.startswith(f"{run / 'results.jsonl'}:{last}: ") and "cut off" in warning
