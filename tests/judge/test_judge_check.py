"""``pearl-verl judge-check``: contrast pairs of known order, and whether a judge can rank them.

The shipped pairs are what the command reports; the held-out pairs (other problems, the same
contrasts) were never used to set the floor, so the offline judge passing both says the floor is
not tuned to the shipped set. A judge that ranks nothing (the same judgement for every dialogue) and
a weak server's junk both fail, each with its reason.
"""

import json
from pathlib import Path

import pytest

from pearl_verl import cli
from pearl_verl.dims import DIMENSIONS
from pearl_verl.errors import InputError
from pearl_verl.judge.calibration import CONTRASTS, build_pairs, load_pairs, shipped_pairs_path
from pearl_verl.judge.prompt import canonical_output
from pearl_verl.judge.rubric import RUBRIC
from pearl_verl.llm.local_server import LocalChatServer, Reply

HELD_OUT = Path(__file__).parent / "fixtures" / "judge_calibration_heldout.jsonl"


def _run(capsys, *argv):
    code = cli.main(["judge-check", "--no-progress", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("pairs", [None, HELD_OUT], ids=["shipped", "held-out"])
def test_the_offline_judge_ranks_the_shipped_and_the_held_out_pairs(capsys, tmp_path, pairs):
    argv = ["--backend", "offline", "-o", str(tmp_path / "report.json"), *(["--pairs", str(pairs)] if pairs else [])]
    code, out, err = _run(capsys, *argv)
    assert code == 0, out + err
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["passed"] and report["agreement"]["mean"] >= report["min_agreement"] == 0.75
    assert report["parse_rate"]["mean"] == 1.0
    assert set(report["by_dimension"]) == {d for c in CONTRASTS.values() for d in c.dimensions}
    assert "the judge ranks these pairs" in out and "95% interval" in out


def test_a_judge_that_gives_every_dialogue_the_same_judgement_ranks_nothing(capsys):
    same = canonical_output({d: {c.key: (c.high, f"Turn 2 shows {c.key}") for c in RUBRIC.for_dimension(d)}
                             for d in DIMENSIONS})
    with LocalChatServer(lambda body: same, model="judge") as server:
        code, out, err = _run(capsys, "--base-url", server.base_url, "--model", "judge", "--structured-output", "none")
    assert code == 1
    assert "parsed   100.0%" in out and "all        0.0%" in out
    assert err.strip().splitlines()[-1].startswith("error: the judge cannot rank these pairs: it orders only 0%")


def test_a_weak_servers_junk_fails_on_the_parse_rate_with_the_reason(capsys):
    junk = canonical_output({d: {c.key: (c.high, "very-high") for c in RUBRIC.for_dimension(d)} for d in DIMENSIONS})
    with LocalChatServer(lambda body: junk, model="judge") as server:
        code, out, err = _run(capsys, "--base-url", server.base_url, "--model", "judge", "--structured-output", "none",
                              "--parse-retries", "0", "--pairs", str(HELD_OUT))
    assert code == 1
    assert "parsed     0.0%" in out
    assert "rationale 'very-high' names nothing in the dialogue" in err  # the first failures, with the reason
    assert "only 0% of its judgements parse" in err


def test_the_shipped_and_held_out_sets_rebuild_exactly_and_share_no_problem():
    shipped = [json.loads(line) for line in shipped_pairs_path().read_text().splitlines()]
    held_out = [json.loads(line) for line in HELD_OUT.read_text().splitlines()]
    assert _lines(build_pairs(0, 4)) == _lines(shipped) and _lines(build_pairs(12, 2)) == _lines(held_out)
    problems = [{r["better"]["problem"]["problem_id"] for r in rows} for rows in (shipped, held_out)]
    assert problems[0] and problems[1] and not problems[0] & problems[1]
    for row in shipped + held_out:  # a pair is one problem and one student, two tutors
        better, worse = row["better"], row["worse"]
        assert better["problem"] == worse["problem"] and better["condition"] == worse["condition"]
        assert better["turns"][0] == worse["turns"][0]


def _lines(rows):
    return [json.dumps(row, sort_keys=True) for row in rows]


def test_a_broken_pairs_file_is_an_error_naming_its_line(tmp_path):
    path = tmp_path / "pairs.jsonl"
    path.write_text(shipped_pairs_path().read_text().splitlines()[0] + "\n" + '{"id": "x", "kind": "k"}\n')
    with pytest.raises(InputError, match=r"pairs.jsonl:2: not a calibration pair \(KeyError"):
        load_pairs(path)
    path.write_text("")
    with pytest.raises(InputError, match="holds no calibration pairs"):
        load_pairs(path)


@pytest.mark.parametrize("argv", [[], ["--base-url", "http://127.0.0.1:9/v1"]], ids=["neither", "no-model"])
def test_an_llm_judge_without_its_endpoint_flags_is_refused_naming_the_flags(capsys, argv):
    code, _, err = _run(capsys, *argv)
    assert code == 2
    assert err.strip().splitlines()[-1].startswith("error: the judge endpoint needs --base-url and --model (got ")
    assert "--backend fitted or offline (CPU judges" in err and "reward_kwargs" not in err  # the flags typed, not verl's config keys


@pytest.mark.parametrize("status", [401, 503])
def test_a_failing_endpoint_is_told_apart_from_a_weak_model(capsys, tmp_path, status):
    report = tmp_path / "report.json"
    with LocalChatServer(lambda body: Reply(status=status), model="judge") as server:
        code, _, err = _run(capsys, "--base-url", server.base_url, "--model", "judge", "--max-retries", "0",
                              "--pairs", str(HELD_OUT), "-o", str(report))
    assert code == 1
    last = err.strip().splitlines()[-1]
    assert last.startswith("error: the judge endpoint failed on ") and f"(http_{status} " in last, last
    assert "stronger" not in last and "Check the server" in last  # the server, not the model
    assert json.loads(report.read_text())["endpoint_failures"] == {f"http_{status}": 2 * len(load_pairs(HELD_OUT))}
    assert f"waiting for {server.base_url}" in err  # said before the wait, not only after it


def test_empty_replies_are_named_as_the_endpoints_failure_with_its_url(capsys, tmp_path):
    report = tmp_path / "report.json"
    with LocalChatServer(lambda body: "", model="judge") as server:
        code, _, err = _run(capsys, "--base-url", server.base_url, "--model", "judge", "--max-retries", "0",
                            "--pairs", str(HELD_OUT), "-o", str(report))
    assert code == 1
    last = err.strip().splitlines()[-1]
    assert last.startswith("error: the judge endpoint failed on ") and "(empty_reply " in last, last
    assert "stronger" not in err and "Check the server" in last  # the server, not the model
    assert f"every reply from {server.base_url} was empty" in err  # a failed judgement names the endpoint
    assert json.loads(report.read_text())["endpoint_failures"] == {"empty_reply": 2 * len(load_pairs(HELD_OUT))}
