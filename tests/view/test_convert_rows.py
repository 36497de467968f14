"""Rows say what they are: view reads them by kind, and old files go through `pearl-verl convert-rows` alone."""

import json

import pytest

from pearl_verl import cli
from pearl_verl.row_kinds import DIALOGUE_KINDS, KIND_FIELD, ROW_KINDS, VERSION_FIELD, RowKindError, kind_of, stamped
from pearl_verl.view.records import READERS, read_sources

from .conftest import SOCRATIC, episode, judgement, make_run_folder


def shown(records):
    """What the page shows of each record, by id."""
    keys = ("source", "step", "slot", "group", "reward", "advantage", "flags", "turns", "dims", "criteria")
    return {r["id"]: {k: r[k] for k in keys} for r in records}


def lines(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line]


def test_an_old_run_folder_is_refused_by_view_with_the_converter_named(tmp_path, capsys):
    old = make_run_folder(tmp_path, old=True)
    assert cli.main(["view", str(old), "-o", str(tmp_path / "v.html")]) == 2
    err = capsys.readouterr().err
    assert f"{old / 'dialogues' / 'step_0001.jsonl'}: no row says what it is (row_kind" in err
    assert "`pearl-verl convert-rows` converts rows" in err
    assert not (tmp_path / "v.html").exists()


def test_converting_an_old_folder_shows_what_the_same_run_written_today_shows(tmp_path, capsys):
    from pearl_verl.dialogue.episode import EpisodeRecord

    old, new = make_run_folder(tmp_path, old=True), make_run_folder(tmp_path)
    before = {p: p.read_bytes() for p in old.rglob("*") if p.is_file()}
    assert cli.main(["convert-rows", str(old), "-o", str(tmp_path / "converted")]) == 0
    out = capsys.readouterr().out
    assert (f"{old / 'heldout.jsonl'} -> {tmp_path / 'converted' / 'heldout.jsonl'}: 2 rows (2 without a kind) as "
            "4 heldout") in out
    assert "convert-rows: 3 files of rows, 3 with rows that had no kind" in out
    assert shown(read_sources([tmp_path / "converted"])) == shown(read_sources([new]))
    converted, written = lines(tmp_path / "converted" / "heldout.jsonl"), lines(new / "heldout.jsonl")
    assert [{**row, "episode": EpisodeRecord.from_dict(row["episode"])} for row in converted] == [
        {**row, "episode": EpisodeRecord.from_dict(row["episode"])} for row in written]  # as train-local writes today
    assert {p: p.read_bytes() for p in old.rglob("*") if p.is_file()} == before  # the input is not changed
    assert cli.main(["convert-rows", str(tmp_path / "converted"), "-o", str(tmp_path / "again")]) == 0
    assert "3 files of rows, 0 with rows that had no kind" in capsys.readouterr().out
    assert all((tmp_path / "again" / p.relative_to(tmp_path / "converted")).read_bytes() == p.read_bytes()
               for p in (tmp_path / "converted").rglob("*.jsonl"))  # current rows pass through as they are


def test_a_resumed_run_mixing_old_evaluations_and_new_rows_converts_into_one_pairing(tmp_path, capsys):
    from pearl_verl.dialogue.episode import EpisodeRecord
    from pearl_verl.train_local.heldout import HeldOut, append_heldout, read_heldout

    old = make_run_folder(tmp_path, old=True)
    # resumed after rows carried their kind: the step-4 validation lost the first problem's dialogue
    held = HeldOut.of(4, 1, [EpisodeRecord.from_dict(episode(SOCRATIC, pid="held-2"))], [judgement(0.8)],
                      [judgement(0.8)], slots=[[0, 1, 0]])
    append_heldout(old / "heldout.jsonl", held, "train")
    with pytest.raises(ValueError, match=r"heldout.jsonl:1: no row_kind: `pearl-verl convert-rows PATH -o OUT`"):
        read_heldout(old / "heldout.jsonl")  # the run's summary does not guess either
    assert cli.main(["convert-rows", str(old / "heldout.jsonl"), "-o", str(tmp_path / "new")]) == 0
    assert "3 rows (2 without a kind) as 5 heldout" in capsys.readouterr().out
    records = read_sources([tmp_path / "new" / "heldout.jsonl"])
    assert sorted((r["slot"], r["step"]) for r in records) == [
        ("heldout:0-0-0", 0), ("heldout:0-0-0", 2), ("heldout:0-1-0", 0), ("heldout:0-1-0", 2), ("heldout:0-1-0", 4)]
    latest = next(r for r in records if r["step"] == 4)
    assert latest["id"] == "heldout:4:0-1-0" and latest["reward"] == 0.8 and len(latest["criteria"]) == 24
    assert [(phase, h.step, h.slots) for phase, h in read_heldout(tmp_path / "new" / "heldout.jsonl")] == [
        ("rl", 0, [[0, 0, 0], [0, 1, 0]]), ("rl", 2, [[0, 0, 0], [0, 1, 0]]), ("train", 4, [[0, 1, 0]])]


def test_each_old_format_converts_to_its_kind(tmp_path, capsys):
    files = {
        "episodes.jsonl": [{"id": "e1", **episode(SOCRATIC)}, episode(SOCRATIC)],  # bare EpisodeRecord lines
        "judged.jsonl": [{"id": "e1", "line": 1, **judgement(0.7)}],
        "sim.jsonl": [{"dialogue": 0, "turn": 0, "student_message": "I need help.", "problem_id": "p"}],
        "results.jsonl": [{"id": "j1", "tutor": "socratic", "episode": None, "error": "boom", "judge": None}],
        "inputs.jsonl": [{"id": "d1", "episode": episode(SOCRATIC)}],
    }
    (tmp_path / "in").mkdir()
    for name, rows in files.items():
        (tmp_path / "in" / name).write_text("".join(json.dumps(row) + "\n" for row in rows))
    assert cli.main(["convert-rows", *(str(tmp_path / "in" / name) for name in files), "-o", str(tmp_path)]) == 0
    kinds = {name: [row[KIND_FIELD] for row in lines(tmp_path / name)] for name in files}
    assert kinds == {"episodes.jsonl": ["dialogue", "dialogue"], "judged.jsonl": ["judgement"],
                     "sim.jsonl": ["student_turn"], "results.jsonl": ["eval"], "inputs.jsonl": ["dialogue"]}
    bare = lines(tmp_path / "episodes.jsonl")
    assert [row["id"] for row in bare] == ["e1", "episodes:2"] and "id" not in bare[0]["episode"]
    assert bare[0]["episode"]["turns"] == episode(SOCRATIC)["turns"]
    records = {r["id"]: r for r in read_sources([tmp_path / "episodes.jsonl", tmp_path / "judged.jsonl"])}
    assert records["e1"]["dims"]["acc"] == 0.7 and records["e1"]["turns"][1]["text"] == SOCRATIC[1][1]


def test_the_converter_refuses_what_it_cannot_place_and_writes_nothing(tmp_path, capsys):
    odd = tmp_path / "odd.jsonl"
    odd.write_text(json.dumps(stamped("dialogue", {"episode": None})) + "\n" + json.dumps({"x": 1}) + "\n")
    newer = tmp_path / "newer.jsonl"
    newer.write_text(json.dumps({KIND_FIELD: "train", VERSION_FIELD: 99, "episode": None}) + "\n")
    good = tmp_path / "good.jsonl"
    good.write_text(json.dumps({"id": "d1", "episode": episode(SOCRATIC)}) + "\n")
    out = tmp_path / "out"
    assert cli.main(["convert-rows", str(good), str(odd), "-o", str(out)]) == 2
    assert "odd.jsonl:2: a row with keys [x] is of no format pearl_verl wrote" in capsys.readouterr().err
    assert cli.main(["convert-rows", str(good), str(newer), "-o", str(out)]) == 2
    assert "newer.jsonl:1: train row_version 99 is newer than this pearl_verl reads (1)" in capsys.readouterr().err
    assert not out.exists()  # every file checked before the first is written
    assert cli.main(["convert-rows", str(good), "-o", str(tmp_path)]) == 2  # would replace its input
    assert "is the folder of the input" in capsys.readouterr().err
    run = make_run_folder(tmp_path, old=True)
    assert cli.main(["convert-rows", str(run), "-o", str(run / "converted")]) == 2
    assert "is inside the folder of the input" in capsys.readouterr().err


def test_a_folder_leaves_files_that_are_not_rows_and_a_dry_run_writes_nothing(tmp_path, capsys):
    old = make_run_folder(tmp_path, old=True)
    (old / "metrics.jsonl").write_text(json.dumps({"step": 1, "reward": 0.5}) + "\n")
    assert cli.main(["convert-rows", str(old), "-o", str(tmp_path / "dry"), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert f"{old / 'metrics.jsonl'}: not copied, not a file of rows this converts" in out
    assert "heldout.jsonl would be" in out and "nothing written (--dry-run)" in out
    assert not (tmp_path / "dry").exists()
    assert cli.main(["convert-rows", str(old), "-o", str(tmp_path / "wet")]) == 0
    assert sorted(str(p.relative_to(tmp_path / "wet")) for p in (tmp_path / "wet").rglob("*.jsonl")) == [
        "dialogues/step_0001.jsonl", "dialogues/step_0002.jsonl", "heldout.jsonl"]


def test_a_row_of_an_old_format_among_new_rows_is_skipped_and_named(run_folder):
    path = run_folder / "dialogues" / "step_0001.jsonl"
    rows = lines(path)
    del rows[0][KIND_FIELD]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    from pearl_verl.view.records import read_dialogues

    reading = read_dialogues([path])
    assert len(reading.records) == len(rows) - 1
    assert reading.skipped == [f"{path}:1: no row_kind: `pearl-verl convert-rows PATH -o OUT` converts rows "
                               "written before rows carried their kind."]


@pytest.mark.parametrize(("row", "message"), [
    ({}, "no row_kind"),
    ({KIND_FIELD: "trian", VERSION_FIELD: 1}, "row_kind 'trian' is none of"),
    ({KIND_FIELD: "train", VERSION_FIELD: 2}, "train row_version 2 is newer than this pearl_verl reads (1)"),
    ({KIND_FIELD: "train", VERSION_FIELD: 0}, "train row_version 0 is not 1: `pearl-verl convert-rows"),
    ({KIND_FIELD: "train", VERSION_FIELD: True}, "train row_version True is not 1"),
    ({KIND_FIELD: "train"}, "train row_version None is not 1"),
])
def test_a_row_of_no_kind_or_version_this_one_reads_is_refused_by_name(row, message):
    with pytest.raises(RowKindError, match=message.replace("(", r"\(").replace(")", r"\)")):
        kind_of(row)


def test_every_kind_of_dialogue_judgement_and_turn_has_a_reader_and_every_stamp_reads_back():
    shown_kinds = {*DIALOGUE_KINDS, "student_turn", "verl"}
    assert set(READERS) == shown_kinds and shown_kinds - {"verl"} | {"judgement"} <= set(ROW_KINDS)
    for kind in ROW_KINDS:
        assert kind_of(stamped(kind, {"x": 1})) == kind
    with pytest.raises(KeyError):
        stamped("metric", {})  # a writer's typo fails at once


def test_a_row_that_is_not_a_dialogue_is_named_not_shown(tmp_path):
    metrics = tmp_path / "metrics.jsonl"
    metrics.write_text(json.dumps(stamped("metrics", {"phase": "train", "step": 1})) + "\n")
    with pytest.raises(ValueError, match=r"metrics.jsonl:1: a metrics row, not a dialogue, a judgement or a student "
                                         r"turn. \(no line of the file is a row pearl-verl view reads\)"):
        read_sources([metrics])


def test_an_old_evaluation_lines_judgements_and_slots_survive_conversion(tmp_path, capsys):
    from pearl_verl.dims import DIMENSIONS

    line = {"phase": "train", "step": 4, "seeds": 1, "rewards": [0.9, None], "observed": {},
            "dims": {d: [0.9, None] for d in DIMENSIONS}, "slots": [[0, 3, 1], [0, 5, 0]],
            "judgements": [judgement(0.9, rationale="asks before telling"), judgement(ok=False)],
            "episodes": [episode(SOCRATIC, pid="held-3"), episode(SOCRATIC, pid="held-5")]}
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "heldout.jsonl").write_text(json.dumps(line) + "\n")
    assert cli.main(["convert-rows", str(tmp_path / "in" / "heldout.jsonl"), "-o", str(tmp_path / "out")]) == 0
    rows = lines(tmp_path / "out" / "heldout.jsonl")
    assert [(r["slot"], r["step"], r["phase"], r["reward"]) for r in rows] == [([0, 3, 1], 4, "train", 0.9),
                                                                              ([0, 5, 0], 4, "train", None)]
    assert rows[0]["judge"]["criteria"][0]["rationale"] == "asks before telling" and rows[1]["judge"]["judge_ok"] == 0
    records = {r["id"]: r for r in read_sources([tmp_path / "out" / "heldout.jsonl"])}
    assert records["heldout:4:0-5-0"]["flags"] == ["judge_failed"]
