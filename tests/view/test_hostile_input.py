"""Odd input and wrong flags: a page that always loads, one skipped row named, one ``error:`` line, exit 2."""

import base64
import gzip
import json
import socket

import pytest

from pearl_verl import cli
from pearl_verl.dims import DIMENSIONS
from pearl_verl.row_kinds import stamped
from pearl_verl.view.page import build_page
from pearl_verl.view.records import SHOWN, read_dialogues, read_sources

from .conftest import SOCRATIC, episode, judgement, make_run_folder


def strict_data(page):
    """The page's embedded data, parsed as the browser's JSON.parse would: NaN and Infinity refused."""
    block = page.split('<script id="pearl-data" type="application/octet-stream">', 1)[1].split("</script>", 1)[0]

    def refuse(token):
        raise ValueError(f"not strict JSON: {token}")

    return json.loads(gzip.decompress(base64.b64decode(block)).decode("utf-8"), parse_constant=refuse)


def view(tmp_path, capsys, *args):
    """``pearl-verl view`` with ``args``: (exit code, stdout, stderr lines)."""
    code = cli.main(["view", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err.splitlines()


def train_row(step=1, **changes):
    row = stamped("train", {"step": step, "uid": "g", "episode": episode(SOCRATIC), "judge": judgement(0.8),
                            "reward": 0.8, "shaped": [0.5] * 8, "advantage": 0.1})
    row.update(changes)
    return row


def dialogue(key, **changes):
    return stamped("dialogue", {"id": key, "episode": episode(SOCRATIC, **changes)})


def judged(key, line, judge):
    return stamped("judgement", {"id": key, "line": line, **judge})


def turn(**fields):
    return stamped("student_turn", fields)


def write_rows(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(row if isinstance(row, str) else json.dumps(row) + "\n" for row in rows))
    return path


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_numbers_become_missing_values_in_strict_json(tmp_path, capsys, bad):
    judge = judgement(0.8)
    judge["acc"] = bad
    judge["criteria"][0]["score"] = bad
    rows = [train_row(judge=judge, reward=bad, advantage=bad, shaped=[bad] * 8), train_row()]
    write_rows(tmp_path / "run" / "dialogues" / "step_0001.jsonl", rows)  # json.dumps writes NaN, Infinity
    write_rows(tmp_path / "dump" / "3.jsonl", [{"input": "u", "output": "t", "score": bad, "step": 3, "uid": "u"}])
    code, _, err = view(tmp_path, capsys, tmp_path / "run", tmp_path / "dump", "-o", tmp_path / "v.html")
    assert code == 0 and err == []
    data = strict_data((tmp_path / "v.html").read_text(encoding="utf-8"))
    odd, fine, verl = sorted(data["records"], key=lambda r: r["i"])
    assert "r" not in odd and "a" not in odd and odd["sh"] == [None] * 8  # missing, not 0
    assert odd["d"][DIMENSIONS.index("acc")] is None and odd["d"][1] == 0.8 and odd["c"][0][1] is None
    assert "bad_input" in odd["f"] and any(i.startswith("reward: ") for i in odd["is"])
    assert "bad_input" not in fine.get("f", []) and fine["r"] == 0.8
    assert "r" not in verl and "bad_input" in verl["f"]


def test_a_non_finite_number_cannot_reach_the_page_by_another_way(tmp_path):
    (rec,) = read_sources([write_rows(tmp_path / "d.jsonl", [dialogue("a")])])
    rec["reward"] = float("nan")  # a record changed after reading, as a tool might
    assert "r" not in strict_data(build_page([rec]))["records"][0]


def test_odd_rows_are_shown_flagged_and_unreadable_ones_skipped_and_counted(tmp_path, capsys):
    turns = episode(SOCRATIC)
    turns["turns"][1] = "a turn that is a bare string"
    surrogate = '{"row_kind": "train", "row_version": 1, "step": 2, "uid": "g", ' \
                '"episode": {"turns": [{"role": "student", "text": "a \\ud800 b"}], ' \
                '"problem": {"problem_id": "p-\\udfff"}, "student_trace": [{"mastery": {"u\\ud800": 0.5}}]}, ' \
                '"judge": null, "advantage": 0.0}\n'
    rows = [train_row(2), train_row(2, judge={**judgement(0.8), "acc": "high"}, reward="high"),
            {k: v for k, v in train_row(episode=turns).items() if k != "step"},  # step missing in a later row
            "[" * 100_000 + "\n", surrogate, train_row(2, episode=None), stamped("train", {"step": 2, "uid": "g"}),
            '{"cut": "by a ki']
    run = tmp_path / "run"
    write_rows(run / "dialogues" / "step_0002.jsonl", rows)
    code, out, err = view(tmp_path, capsys, run, "-o", tmp_path / "v.html")
    assert code == 0 and "Traceback" not in "\n".join(err)
    assert "3 input rows skipped" in out
    step_file = run / "dialogues" / "step_0002.jsonl"
    assert err == [f"warning: skipped {step_file}:4: JSON nested too deeply to read",
                   f"warning: skipped {step_file}:8: not valid JSON (Unterminated string starting at at column 9)",
                   f"warning: skipped {step_file}:7: no field 'episode'."]
    data = strict_data((tmp_path / "v.html").read_text(encoding="utf-8"))
    assert "3 input rows could not be read" in data["note"]
    by_id = {r["i"]: r for r in data["records"]}
    assert len(by_id) == 5  # lines 1, 2, 3, 5 and 6 (an episode of null shows as an empty dialogue)
    high = by_id["train:2:1"]
    assert "r" not in high and high["d"][DIMENSIONS.index("acc")] is None and "bad_input" in high["f"]
    assert any("'high' is not a number" in issue for issue in high["is"])
    stepless = by_id["train:2:2"]
    assert stepless["st"] == 2 and stepless["t"][1][1] == "a turn that is a bare string"
    assert "step: missing; taken from the file name (2)" in stepless["is"]
    lone = by_id["train:2:3"]  # the 4th readable row
    assert lone["t"][0][1] == "a \ufffd b" and data["problems"][lone["p"]][0] == "p-\ufffd"
    assert lone["t"][0][2][2] == {"u\ufffd": 0.5} and "bad_input" in lone["f"]


def test_a_lone_surrogate_in_a_title_or_judge_text_still_writes_the_page(tmp_path, capsys):
    write_rows(tmp_path / "d.jsonl", [dialogue("a")])
    write_rows(tmp_path / "j.jsonl", [judged("a", 1, judgement(0.8, rationale="why \ud800"))])
    code, _, err = view(tmp_path, capsys, tmp_path / "d.jsonl", tmp_path / "j.jsonl", "-o", tmp_path / "v.html",
                        "--title", "run \udcff")  # argv's undecodable bytes arrive as lone surrogates
    assert code == 0 and err == []
    data = strict_data((tmp_path / "v.html").read_text(encoding="utf-8"))
    assert data["title"] == "run \ufffd" and data["records"][0]["c"][0][2] == "why \ufffd"
    assert data["records"][0]["f"] == ["bad_input"]


def test_simulate_turns_numbered_as_ints_and_strings_sort_as_numbers(tmp_path):
    rows = [turn(dialogue=1, turn=number, student_message=f"s{number}", tutor_message=f"t{number}")
            for number in (2, "10", 1, "3")]
    rows.append(turn(dialogue="1", turn="x", student_message="last", tutor_message=None))
    rows.append(turn(turn=1, student_message="no dialogue"))
    reading = read_dialogues([write_rows(tmp_path / "sim.jsonl", rows)])
    (rec,) = reading.records
    assert [t["text"] for t in rec["turns"] if t["role"] == "student"] == ["s1", "s2", "s3", "s10", "last"]
    assert reading.skipped == [f"{tmp_path / 'sim.jsonl'}:6: no field 'dialogue'."]


def test_the_judges_own_input_form_is_shown_and_joined_with_its_output(tmp_path, capsys):
    inputs = write_rows(tmp_path / "in.jsonl", [dialogue("a"), {**dialogue(7, pid="p-7")}])
    records = {r["id"]: r for r in read_sources([inputs])}
    assert set(records) == {"a", "7"} and records["7"]["problem_id"] == "p-7"
    assert records["a"]["source"] == "dialogues" and records["a"]["dims"] is None and records["a"]["flags"] == []
    write_rows(tmp_path / "out.jsonl", [judged("a", 1, judgement(0.7))])
    assert {r["id"]: r for r in read_sources([inputs, tmp_path / "out.jsonl"])}["a"]["dims"]["acc"] == 0.7
    code, out, _ = view(tmp_path, capsys, inputs, "-o", tmp_path / "v.html")
    assert code == 0 and "2 dialogues (2 dialogues)" in out


def test_a_file_with_no_readable_row_is_one_located_error(tmp_path, capsys):
    garbage = write_rows(tmp_path / "g.jsonl", ["not json\n", "[" * 100_000 + "\n"])
    code, _, err = view(tmp_path, capsys, garbage, "-o", tmp_path / "v.html")
    assert code == 2 and len(err) == 1 and err[0].startswith(f"error: {garbage}:1: not valid JSON")
    assert not (tmp_path / "v.html").exists()


def test_messages_do_not_echo_long_values(tmp_path, capsys):
    odd = write_rows(tmp_path / "odd.jsonl", [{"k" * 10_000: 1, "x": 2}])
    code, _, err = view(tmp_path, capsys, odd, "-o", tmp_path / "v.html")
    assert code == 2 and len(err) == 1 and len(err[0]) < 400
    write_rows(tmp_path / "run" / "dialogues" / "step_0001.jsonl", [train_row(reward="h" * 10_000)])
    (rec,) = read_sources([tmp_path / "run"])
    assert all(len(issue) < SHOWN + 60 for issue in rec["issues"]) and rec["reward"] is None


@pytest.mark.parametrize(("flags", "named"), [
    (["--port", "70000"], "--port: got 70000; allowed: a whole number from 0 to 65,535 (0: any free port)"),
    (["--port", "-1"], "--port: got -1; allowed: a whole number from 0 to 65,535"),
    (["--port", "8.5"], "--port: got 8.5; allowed: a whole number from 0 to 65,535"),
    (["--max-dialogues", "-5"], "--max-dialogues: got -5; allowed: a whole number from 1 to"),
    (["--max-dialogues", "0"], "--max-dialogues: got 0; allowed: a whole number from 1 to"),
])
def test_bad_numbers_are_one_error_naming_the_flag(tmp_path, capsys, flags, named):
    run = make_run_folder(tmp_path)
    with pytest.raises(SystemExit) as exited:
        view(tmp_path, capsys, run, "-o", tmp_path / "v.html", *flags)
    out, err = capsys.readouterr()
    errors = [line for line in err.splitlines() if "error:" in line]
    assert (exited.value.code, out, len(errors)) == (2, "", 1) and f"error: argument {named}" in errors[0]
    assert not (tmp_path / "v.html").exists()


def test_a_port_in_use_is_one_error_naming_the_flag_before_anything_is_read(tmp_path, capsys):
    run = make_run_folder(tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, out, err = view(tmp_path, capsys, run, "-o", tmp_path / "v.html", "--serve", "--port", port)
    assert (code, out, len(err)) == (2, "", 1)
    assert err[0].startswith(f"error: --port {port}: cannot listen on 127.0.0.1:{port} (")
    assert not (tmp_path / "v.html").exists()


@pytest.mark.parametrize("where", ["a directory", "under a file", "under /proc", "a device"])
def test_an_output_that_cannot_be_written_is_one_error_naming_the_flag(tmp_path, capsys, where):
    run = make_run_folder(tmp_path)
    (tmp_path / "a-file").write_text("keep")
    output = {"a directory": run, "under a file": tmp_path / "a-file" / "deeper" / "view.html",
              "under /proc": "/proc/pearl-verl-no-such/view.html", "a device": "/dev/null"}[where]
    before = sorted(p.name for p in tmp_path.rglob("*"))
    # the output-path type of every command's -o, while parsing; a device is a path any command could write to,
    # but the page must be a file of its own
    with pytest.raises(SystemExit) as exited:
        view(tmp_path, capsys, run, "-o", output)
    errors = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert exited.value.code == 2 and len(errors) == 1
    assert errors[0].startswith(f"pearl-verl view: error: argument -o/--output: {output}"), errors
    assert sorted(p.name for p in tmp_path.rglob("*")) == before and (tmp_path / "a-file").read_text() == "keep"


def test_missing_folders_of_the_output_are_still_created(tmp_path, capsys):
    run = make_run_folder(tmp_path)
    code, _, _ = view(tmp_path, capsys, run, "-o", tmp_path / "new" / "dir" / "v.html")
    assert code == 0 and strict_data((tmp_path / "new" / "dir" / "v.html").read_text(encoding="utf-8"))["records"]


def test_an_unreadable_file_in_a_rollout_folder_is_skipped_and_named(tmp_path):
    dump = tmp_path / "rollouts"
    write_rows(dump / "3.jsonl", [{"input": "u", "output": "t", "score": 0.5, "step": 3, "uid": "u"}])
    write_rows(dump / "4.jsonl", ['{"input": "cut by a ki'])  # the step being written when view ran
    reading = read_dialogues([dump])
    assert [r["id"] for r in reading.records] == ["verl:3:0"]
    (skipped,) = reading.skipped
    assert skipped.startswith(f"{dump / '4.jsonl'}:1: not valid JSON (Unterminated string")
    assert skipped.endswith("(and no line of the file is a readable row).")
