"""Every source read into one record shape, with a reviewer's flags."""

import json
from pathlib import Path

import pytest

import pearl_verl.resources
from pearl_verl import cli
from pearl_verl.dialogue.row import dialogue_row
from pearl_verl.row_kinds import stamped
from pearl_verl.view.page import build_page, encode, sample, unpack
from pearl_verl.view.records import read_sources

from .conftest import EVALUATOR, LEAK, SOCRATIC, XSS, episode, judgement


def test_a_train_local_folder_gives_steps_groups_and_held_out_slots(run_folder):
    records = read_sources([run_folder])
    train = [r for r in records if r["source"] == "train"]
    held = [r for r in records if r["source"] == "heldout"]
    assert len(train) == 8 and len(held) == 4
    assert {r["group"] for r in train if r["step"] == 2} == {"step1-0", "step1-1"}
    # the same held-out slot at two steps: what the comparison view pairs
    assert sorted((r["slot"], r["step"]) for r in held) == [("heldout:0-0-0", 0), ("heldout:0-0-0", 2),
                                                          ("heldout:0-1-0", 0), ("heldout:0-1-0", 2)]
    leak = next(r for r in train if r["turns"][1]["text"] == LEAK[1][1])
    assert leak["flags"] == ["answer_first", "judge_failed"] and leak["leak_turns"] == [1]
    assert leak["advantage"] == 0.0 and leak["reward"] is None and leak["judge_error"] == "parse: no JSON object"
    assert next(r for r in train if r["turns"][1]["text"] == EVALUATOR[1][1])["flags"] == ["addresses_evaluator"]
    assert [r for r in train if "truncated" in r["flags"]][0]["end_reason"] == "token_budget"
    socratic = next(r for r in train if r["flags"] == [] and r["step"] == 1)
    assert socratic["turns"][2]["state"] == {"intent": ["answer"], "attempt": "correct", "mastery": {"mult": 0.6}}
    assert len(socratic["criteria"]) == 24 and socratic["shaped"]["acc"] == 0.5 and socratic["ability"] == "low"


def test_held_out_judgements_bring_their_criteria(tmp_path):
    from pearl_verl.dialogue.episode import EpisodeRecord
    from pearl_verl.train_local.heldout import HeldOut, append_heldout

    path = tmp_path / "heldout.jsonl"
    held = HeldOut.of(2, 1, [EpisodeRecord.from_dict(episode(SOCRATIC, pid=f"held-{k}")) for k in (1, 2)],
                      [judgement(0.9), judgement(ok=False)], [judgement(0.9, rationale="asks before telling"),
                                                              judgement(ok=False)])
    append_heldout(path, held, "rl")
    held = {r["id"]: r for r in read_sources([path])}
    assert held["heldout:2:0-0-0"]["criteria"][0]["rationale"] == "asks before telling"
    assert held["heldout:2:0-1-0"]["flags"] == ["judge_failed"] and held["heldout:2:0-1-0"]["reward"] is None


def test_judge_output_joins_its_dialogues_by_id(tmp_path):
    dialogues = tmp_path / "dialogues.jsonl"
    dialogues.write_text("".join(json.dumps(dialogue_row("dialogue", episode(turns), None, None, id=key)) + "\n"
                                 for key, turns in (("a", SOCRATIC), ("b", LEAK))))
    judged = tmp_path / "judged.jsonl"
    judged.write_text("".join(json.dumps(stamped("judgement", {"id": key, "line": line, **judge})) + "\n"
                              for key, line, judge in (("a", 1, judgement(0.8)), ("b", 2, judgement(ok=False)),
                                                       ("c", 3, judgement(0.5)))))
    records = {r["id"]: r for r in read_sources([dialogues, judged])}
    assert records["a"]["dims"]["acc"] == 0.8 and records["a"]["turns"][1]["text"] == SOCRATIC[1][1]
    assert records["b"]["flags"] == ["answer_first", "judge_failed"]
    assert records["c"]["turns"] == [] and records["c"]["reward"] == 0.5  # judged, dialogue not given


def test_simulate_and_eval_tutor_outputs_are_read(tmp_path, capsys):
    data = str(Path(pearl_verl.resources.__file__).parent / "data" / "mathdial" / "test_first20.jsonl")
    assert cli.main(["simulate", data, "--limit", "2", "--out", str(tmp_path / "sim.jsonl")]) == 0
    assert cli.main(["eval-tutor", data, "--limit", "1", "--judge", "offline", "--out", str(tmp_path / "et"),
                     "--tutor", "name=socratic,scripted=socratic", "--progress", "off"]) == 0
    capsys.readouterr()
    records = read_sources([tmp_path / "sim.jsonl", tmp_path / "et"])
    sim = [r for r in records if r["source"] == "simulate"]
    assert len(sim) == 2 and all(r["turns"][0]["role"] == "student" and r["turns"][0]["state"] for r in sim)
    evals = [r for r in records if r["source"] == "eval"]
    assert evals and all(r["tutor"] == "socratic" and r["judge_ok"] for r in evals)


def test_a_verl_rollout_dump_is_read_as_prompt_and_response(tmp_path):
    dump = tmp_path / "rollouts"
    dump.mkdir()
    (dump / "3.jsonl").write_text(json.dumps({"input": "user: help", "output": "What do you know?", "gts": None,
                                              "score": 0.7, "step": 3, "uid": "u1_0_0"}) + "\n")
    (rec,) = read_sources([dump])
    assert (rec["source"], rec["step"], rec["reward"]) == ("verl", 3, 0.7)
    assert [t["role"] for t in rec["turns"]] == ["student", "tutor"]


def test_unknown_files_and_missing_paths_are_named(tmp_path):
    odd = tmp_path / "odd.jsonl"
    odd.write_text(json.dumps({"x": 1}) + "\n")
    with pytest.raises(ValueError, match=r"odd.jsonl: no row says what it is \(row_kind; the first has keys \['x'\]\)"):
        read_sources([odd])
    with pytest.raises(ValueError, match="does not exist"):
        read_sources([tmp_path / "none"])
    assert cli.main(["view", str(odd), "-o", str(tmp_path / "v.html")]) == 2


def test_the_page_embeds_data_that_cannot_break_out_of_its_script_block(run_folder):
    page = build_page(read_sources([run_folder]))
    block = page.split('<script id="pearl-data" type="application/octet-stream">', 1)[1].split("</script>", 1)[0]
    assert set(block) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=")  # base64 only
    data = unpack(block)
    assert any(XSS["closing"] == problem[0] for problem in data["problems"])  # the payload, intact, inside
    assert "Content-Security-Policy" in page and "default-src 'none'" in page and "unsafe-inline" not in page


def test_large_inputs_keep_every_flagged_dialogue_and_say_so(run_folder):
    records = read_sources([run_folder]) * 50
    records = [{**r, "id": f"{r['id']}#{i}"} for i, r in enumerate(records)]
    shown, note = sample(records, 100)
    flagged = sum(1 for r in records if r["flags"])
    assert len(shown) == 100 and sum(1 for r in shown if r["flags"]) == min(flagged, 100)
    assert f"of {len(records):,} dialogues" in note
    encoded = encode(shown)
    assert len(encoded["problems"]) <= 6 and len(encoded["criteria"]) == 24  # stored once, not per dialogue


def test_serve_answers_the_page_and_nothing_else(run_folder, tmp_path):
    import threading
    import urllib.error
    import urllib.request

    from pearl_verl.view.view_cli import page_server

    page = tmp_path / "v.html"
    assert cli.main(["view", str(run_folder), "-o", str(page)]) == 0
    (tmp_path / "secret.txt").write_text("not for the network")
    with page_server(page) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        base = f"http://127.0.0.1:{server.server_address[1]}"
        assert urllib.request.urlopen(base + "/").read() == page.read_bytes()
        with pytest.raises(urllib.error.HTTPError, match="404"):
            urllib.request.urlopen(base + "/secret.txt")
        server.shutdown()
