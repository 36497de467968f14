"""``pearl-verl judge-check --human FILE``: exit 0 above the floor, 1 under it, 2 on a malformed file, with the
offline judge on hand-made MRBench files, and the served judge over a real HTTP server."""

import json
import re

import pytest

from pearl_verl import cli
from pearl_verl.judge.prompt import one_turn_system_prompt
from pearl_verl.llm.local_server import LocalChatServer, Reply

REVEALING, TONE = "Revealing_of_the_Answer", "Tutor_Tone"
TOLD = "The answer is 10."
ASKED = "How many apples are in the 3 boxes? You can do it!"
RUDE = "That is wrong and careless. How many apples are in the 3 boxes?"


def _rows(make_mrbench_row, told="Yes (and the answer is correct)", asked="No"):
    """A test and a train conversation, each with the three candidates labelled on Revealing and Tone only.

    The offline judge finds the answer stated in TOLD (leak.final_answer 0.5, the others 1.0) and blame in
    RUDE (emotion.encouraging_tone 0.0, ASKED 1.0); TOLD carries no tone label.
    """
    def responses():  # fresh label dicts per row, so a test can spoil one row alone
        return {"told": (TOLD, {REVEALING: told}), "asked": (ASKED, {REVEALING: asked, TONE: "Encouraging"}),
                "rude": (RUDE, {REVEALING: asked, TONE: "Offensive"})}

    return [make_mrbench_row(responses(), split=split, conversation_id=split) for split in ("test", "train")]


def _run(capsys, *argv):
    code = cli.main(["judge-check", "--no-progress", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_judge_above_the_floor_exits_0_with_the_table_and_the_report(capsys, tmp_path, make_mrbench_row,
                                                                      write_mrbench):
    path = write_mrbench(_rows(make_mrbench_row))
    code, out, err = _run(capsys, "--human", str(path), "--backend", "offline", "-o", str(tmp_path / "r.json"))
    assert code == 0, out + err
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["passed"] and report["min_agreement"] == 0.5  # --human's own default floor
    assert (report["conversations"], report["responses"], report["tuning_conversations"]) == (1, 3, 1)
    revealing, tone = report["by_dimension"][REVEALING], report["by_dimension"][TONE]
    assert (revealing["pairs"], revealing["agreed"], tone["pairs"], tone["agreed"]) == (2, 2, 1, 1)
    assert revealing["thresholds"] is not None and revealing["macro_f1"] == 1.0
    assert report["by_dimension"]["Coherence"]["agreement"] is None  # not labelled in this file
    assert len(report["judgements"]) == 6 and report["parse_rate"]["mean"] == 1.0
    assert re.search(r"Revealing_of_the_Answer\s+100\.0%\s+34%-100%\s+2\s+0\s+0\s+1\.000", out), out
    assert "humanlikeness" in out and "not mapped" in out
    assert "pairs of one conversation share a history" in out and "BEA 2025" in out
    assert out.strip().splitlines()[-1].startswith("the judge agrees with the teachers above the floor")


def test_a_judge_under_the_floor_exits_1_naming_the_dimension(capsys, make_mrbench_row, write_mrbench):
    # The labels say the other way round: TOLD kept the answer back, the two others gave it away.
    path = write_mrbench(_rows(make_mrbench_row, told="No", asked="Yes (and the answer is correct)"))
    code, _, err = _run(capsys, "--human", str(path), "--backend", "offline")
    assert code == 1
    last = err.strip().splitlines()[-1]
    assert last == ("error: the judge does not agree with the teachers: it orders under 50% of the pairs as the "
                    "teachers do on Revealing_of_the_Answer 0%.")


def test_an_explicit_floor_replaces_the_human_default(capsys, make_mrbench_row, write_mrbench, tmp_path):
    rows = _rows(make_mrbench_row)
    rows[0]["anno_llm_responses"]["told"]["annotation"][TONE] = "Neutral"  # Neutral 0.0 ties Offensive 0.0
    path = write_mrbench(rows)
    assert _run(capsys, "--human", str(path), "--backend", "offline")[0] == 0  # Tone 2 of 3: above 50%
    code, _, err = _run(capsys, "--human", str(path), "--backend", "offline", "--min-agreement", "0.9",
                        "-o", str(tmp_path / "r.json"))
    assert code == 1 and "Tutor_Tone 67%" in err
    assert json.loads((tmp_path / "r.json").read_text())["below_floor"] == [TONE]


def test_a_malformed_file_exits_2_with_the_readers_located_error(capsys, make_mrbench_row, write_mrbench):
    rows = _rows(make_mrbench_row)
    rows[1]["anno_llm_responses"]["rude"]["annotation"][TONE] = "Rude"
    code, out, err = _run(capsys, "--human", str(write_mrbench(rows)), "--backend", "offline")
    assert code == 2 and out == ""
    assert "row 2 (list index 1, conversation_id 'train'): field 'anno_llm_responses.rude.annotation.Tutor_Tone': " \
           "has label 'Rude'" in err


@pytest.mark.parametrize("argv, message", [
    (["--splits", "val"], "no conversation has split ['val']"),
    (["--pairs", "x.jsonl"], "--pairs and --human are two checks"),
    (["--backend", "probe"], "--backend probe cannot"),
])
def test_what_cannot_be_measured_exits_2(capsys, make_mrbench_row, write_mrbench, argv, message):
    path = write_mrbench(_rows(make_mrbench_row)[:1])
    code, _, err = _run(capsys, "--human", str(path), "--backend", "offline", *argv)
    assert code == 2 and message in err, err


def test_splits_and_limit_go_with_human(capsys):
    code, _, err = _run(capsys, "--backend", "offline", "--limit", "2")
    assert code == 2 and "--splits and --limit go with --human" in err


def test_a_bea_file_without_splits_is_measured_whole_with_splits_all(capsys, tmp_path, make_mrbench_row,
                                                                     write_mrbench):
    # BEA 2025 rows: no split, no solution (so no reference answer), only some dimensions labelled
    row = _rows(make_mrbench_row)[0]
    responses = {tutor: {"response": r["response"], "annotation": {TONE: r["annotation"][TONE]}}
                 for tutor, r in row["anno_llm_responses"].items() if TONE in r["annotation"]}
    bea = {"conversation_id": "b1", "conversation_history": row["conversation_history"], "tutor_responses": responses}
    path = write_mrbench([bea], "bea.json")
    code, _, err = _run(capsys, "--human", str(path), "--backend", "offline")
    assert code == 2 and "field 'Split': is absent" in err and "(no split filter): --splits all" in err
    code, out, err = _run(capsys, "--human", str(path), "--backend", "offline", "--splits", "all",
                          "-o", str(tmp_path / "r.json"))
    assert code == 0, out + err
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["by_dimension"][TONE]["agreed"] == 1 and report["by_dimension"][TONE]["macro_f1"] is None
    assert report["by_dimension"][REVEALING]["pairs"] == 0 and report["judgements"][0]["split"] is None


def test_the_served_judge_is_asked_one_turn_at_a_time(capsys, tmp_path, make_mrbench_row, write_mrbench, make_output):
    def respond(body):
        candidate = body["messages"][1]["content"].split('candidate="yes">\n', 1)[1]
        overrides = {}
        if "answer is" in candidate:
            overrides["leak.final_answer"] = 0
        if "careless" in candidate:
            overrides["emotion.encouraging_tone"] = 0
        return make_output(overrides)

    path = write_mrbench(_rows(make_mrbench_row))
    with LocalChatServer(respond, model="judge") as server:
        code, out, err = _run(capsys, "--human", str(path), "--base-url", server.base_url, "--model", "judge",
                              "--structured-output", "none", "--concurrency", "2", "-o", str(tmp_path / "r.json"))
    assert code == 0, out + err
    assert len(server.requests) == 6 and server.max_in_flight <= 2
    assert all(r["messages"][0]["content"] == one_turn_system_prompt() for r in server.requests)
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["by_dimension"][REVEALING]["agreed"] == 2 and report["by_dimension"][TONE]["agreed"] == 1
    assert "waiting for " + server.base_url in err


def test_a_served_judge_that_is_down_is_no_verdict_on_the_model(capsys, make_mrbench_row, write_mrbench):
    path = write_mrbench(_rows(make_mrbench_row))
    with LocalChatServer(lambda body: Reply(status=503), model="judge") as server:
        code, _, err = _run(capsys, "--human", str(path), "--base-url", server.base_url, "--model", "judge",
                            "--max-retries", "0")
    assert code == 1
    assert err.strip().splitlines()[-1].startswith("error: the judge endpoint failed on 6 of 6 judgements (http_503 6)")
