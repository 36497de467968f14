"""``pearl-verl judge``: incremental, resumable scoring of a JSONL file; bad lines never stop a run."""

import argparse
import asyncio
import json

import pytest

from pearl_verl import cli
from pearl_verl.dims import DIMENSIONS
from pearl_verl.errors import InputError
from pearl_verl.judge import judge_cli
from pearl_verl.judge.batch import done_ids, judge_file
from pearl_verl.judge.offline import HeuristicJudge
from pearl_verl.judge.reward_info import REWARD_INFO_KEYS
from pearl_verl.llm.local_server import LocalChatServer, Reply


def _parser():
    parser = argparse.ArgumentParser(prog="pearl-verl")
    judge_cli.register(parser.add_subparsers(dest="command"))
    return parser


def _write_dialogues(path, episodes, extra_lines=()):
    lines = [json.dumps({"id": f"d{i}", **e.to_dict()}) for i, e in enumerate(episodes)]
    path.write_text("\n".join([*lines, *extra_lines]) + "\n")


def _rows(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


class CountingJudge(HeuristicJudge):
    def __init__(self):
        super().__init__()
        self.seen = []

    async def judge(self, episode):
        self.seen.append(episode.turns[0].text)
        return await super().judge(episode)


def test_offline_run_writes_one_line_per_dialogue_and_resumes(tmp_path, make_episode, capsys):
    episodes = [
        make_episode([f"Help {i}?", "What is 3 times 4?", "12", "And then?", "10", "Well done!"]) for i in range(5)
    ]
    source, out = tmp_path / "dialogues.jsonl", tmp_path / "scores.jsonl"
    _write_dialogues(source, episodes, extra_lines=["{not json", json.dumps({"id": "bad", "turns": []})])
    args = _parser().parse_args(
        ["judge", str(source), "-o", str(out), "--backend", "offline", "--criteria", "--no-progress"]
    )
    assert args.handler(args) == 1  # the two malformed lines hold no dialogue
    rows = _rows(out)
    assert len(rows) == 7 and {r["id"] for r in rows} == {"d0", "d1", "d2", "d3", "d4", "line-6", "bad"}
    assert {(r["row_kind"], r["row_version"]) for r in rows} == {("judgement", 1)}  # a failed line's row too
    good = [r for r in rows if r["judge_ok"]]
    assert len(good) == 5 and all(set(REWARD_INFO_KEYS) <= set(r) and len(r["criteria"]) == 24 for r in good)
    assert all(r["completed"] == 1 and r["tutor_turns"] == 3 and r["error"] is None for r in good)
    bad = {r["id"]: r["error"] for r in rows if not r["judge_ok"]}
    assert bad["line-6"].startswith("not valid JSON") and bad["bad"].startswith("not an episode record")
    printed, err = capsys.readouterr()
    assert "5 judged (5 ok, 0 failed), 2 input lines hold no dialogue, 0 already done, 7 in input" in printed
    assert "not the paper's judge" in printed
    # The fix is in the input, so the error says which lines, and does not send the user to --retry-failed.
    assert err.strip() == (f"error: {source}: 2 lines hold no dialogue (line 6, 7; their 'error' field in {out} says "
                           "why); fix or remove those lines")
    # A second run judges nothing, --retry-failed included: those lines would fail the same way.
    judge = CountingJudge()
    summary = asyncio.run(judge_file(judge, source, out))
    assert (summary.total, summary.skipped, summary.judged, judge.seen) == (7, 7, 0, [])
    summary = asyncio.run(judge_file(judge, source, out, retry_failed=True))
    assert (summary.skipped, summary.judged, summary.skipped_unreadable, summary.unreadable_lines) == (7, 0, 2, [6, 7])
    assert len(_rows(out)) == 7


def test_a_run_killed_mid_line_resumes_cleanly(tmp_path, make_episode):
    episodes = [make_episode([f"Help {i}?", "What is 3 times 4?", "12"], end_reason="turn_limit") for i in range(4)]
    source, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    _write_dialogues(source, episodes)
    asyncio.run(judge_file(HeuristicJudge(), source, out, concurrency=2))
    lines = out.read_text().splitlines()
    out.write_text("\n".join(lines[:2]) + "\n" + lines[2][:25])  # killed while writing the third line
    assert len(done_ids(out, retry_failed=False)) == 2
    judge = CountingJudge()
    summary = asyncio.run(judge_file(judge, source, out, concurrency=3))
    assert summary.judged == 2 and summary.skipped == 2
    # The cut-short line is gone (not left mid-file, where a strict reader would reject it).
    assert out.read_text().splitlines()[:2] == lines[:2]
    assert sorted(json.loads(x)["id"] for x in out.read_text().splitlines()[2:]) == sorted(
        {f"d{i}" for i in range(4)} - {json.loads(x)["id"] for x in lines[:2]}
    )


class StuckJudge(HeuristicJudge):
    """A judge whose every judgement waits for ever (an endpoint that never answers); it counts its cancellations."""

    def __init__(self):
        super().__init__()
        self.cancelled = 0
        self.started = None

    async def judge(self, episode):
        self.started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled += 1
            raise


def test_a_cancelled_run_drops_the_dialogues_in_flight_instead_of_waiting_for_them(tmp_path, make_episode):
    """A stop cancels the run (``pearl_verl.async_run``): it ends with its worker cancelled, where waiting for the
    worker, or queueing an end marker into a queue that no cancelled worker empties, would hold it for ever."""
    source, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    _write_dialogues(source, [make_episode([f"Help {i}?", "What is 3 times 4?", "12"]) for i in range(6)])
    judge = StuckJudge()

    async def stopped_run():
        judge.started = asyncio.Event()
        run = asyncio.create_task(judge_file(judge, source, out, concurrency=1))
        await judge.started.wait()
        run.cancel()
        await asyncio.wait_for(asyncio.gather(run, return_exceptions=True), 60)  # against a hang, not a time bound
        return run

    assert asyncio.run(stopped_run()).cancelled()
    assert judge.cancelled == 1 and out.read_text() == ""


def test_duplicate_ids_are_rejected(tmp_path, make_episode):
    source = tmp_path / "dup.jsonl"
    record = json.dumps({"id": "same", **make_episode(["hi"]).to_dict()})
    source.write_text(record + "\n" + record + "\n")
    with pytest.raises(InputError, match=r"dup.jsonl:2: id: 'same' appears twice"):
        asyncio.run(judge_file(HeuristicJudge(), source, tmp_path / "out.jsonl"))


def test_llm_backend_against_a_local_server_records_failures_per_line(tmp_path, make_episode, make_output):
    episodes = [make_episode([f"Student {i}", "What is 3 times 4?", "12", "Good.", "10", "Yes!"]) for i in range(6)]
    source, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    _write_dialogues(source, episodes)

    def respond(body):
        text = body["messages"][1]["content"]
        return Reply(status=500) if "Student 3" in text else make_output({"guide.questioning": 1})

    with LocalChatServer(respond) as server:
        args = _parser().parse_args(
            [
                "judge",
                str(source),
                "-o",
                str(out),
                "--base-url",
                server.base_url,
                "--model",
                "m",
                "--max-retries",
                "1",
                "--parse-retries",
                "0",
                "--concurrency",
                "4",
                "--no-progress",
            ]
        )
        assert args.handler(args) == 1
    rows = {r["id"]: r for r in _rows(out)}
    assert rows["d3"]["judge_ok"] == 0 and "http_500" in rows["d3"]["error"]
    assert all(rows[f"d{i}"]["guide"] == pytest.approx(5 / 6) for i in (0, 1, 2, 4, 5))
    assert all(set(DIMENSIONS) <= set(r) for r in rows.values())


def test_cli_reports_config_errors_as_values():
    args = _parser().parse_args(["judge", "x.jsonl", "-o", "y.jsonl", "--backend", "llm"])
    with pytest.raises(ValueError, match="the judge endpoint needs --base-url and --model"):
        args.handler(args)


def _main(*argv):
    """``pearl-verl judge ...`` as the console script runs it (ValueError -> exit 2)."""
    return cli.main([str(a) for a in argv], modules=("pearl_verl.judge.judge_cli",))


def _llm_args(source, out, server, *extra):
    return ("judge", source, "-o", out, "--base-url", server.base_url, "--model", "m", "--max-retries", "0",
            "--no-progress", *extra)  # fmt: skip


def test_backend_failed_episodes_are_flagged_without_a_judge_call(tmp_path, make_episode, make_output, capsys):
    texts = ["What is 3 times 4?", "12", "Good.", "10", "Yes!"]
    episodes = [
        make_episode(["Student 0", *texts]),
        make_episode(["Student 1", *texts], end_reason="student_error"),
        make_episode(["Student 2", *texts], end_reason="tutor_error"),
    ]
    source, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    _write_dialogues(source, episodes)
    with LocalChatServer(lambda body: make_output()) as server:
        assert _main(*_llm_args(source, out, server)) == 0
        assert len(server.requests) == 1  # only the dialogue that ended normally went to the endpoint
        rows = {r["id"]: r for r in _rows(out)}
        for key, reason in (("d1", "student_error"), ("d2", "tutor_error")):
            assert (rows[key]["judge_ok"], rows[key]["attempts"], rows[key]["gate"]) == (0, 0, None)
            assert rows[key]["error"] == f"not judged: episode ended with {reason}"
        assert rows["d0"]["judge_ok"] == 1
        assert "1 judged (1 ok, 0 failed), 2 not judged (episode ended in a backend error)" in capsys.readouterr().out
        # --retry-failed retries what a call could fix, not episodes that failed before judging.
        assert _main(*_llm_args(source, out, server, "--retry-failed")) == 0
        assert len(server.requests) == 1 and len(_rows(out)) == 3


def test_a_run_exits_1_while_its_output_holds_a_failed_judgement(tmp_path, make_episode, make_output, capsys):
    episodes = [make_episode([f"Student {i}", "What is 3 times 4?", "12"], end_reason="turn_limit") for i in range(2)]
    source, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    _write_dialogues(source, episodes)
    down = {"Student 1"}

    def respond(body):
        return Reply(status=500) if any(s in body["messages"][1]["content"] for s in down) else make_output()

    with LocalChatServer(respond) as server:  # one at a time: Student 0's answer settles structured output first
        assert _main(*_llm_args(source, out, server, "--concurrency", "1")) == 1
        capsys.readouterr()
        assert _main(*_llm_args(source, out, server)) == 1  # resumed: the stored failure still stands
        assert "1 of 2 dialogues" in capsys.readouterr().err and len(server.requests) == 2
        down.clear()
        assert _main(*_llm_args(source, out, server, "--retry-failed")) == 0


def test_a_run_whose_judgements_all_failed_exits_1_fresh_or_resumed(tmp_path, make_episode, capsys):
    episodes = [make_episode([f"Student {i}", "What is 3 times 4?", "12"], end_reason="turn_limit") for i in range(3)]
    source, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    _write_dialogues(source, episodes)
    with LocalChatServer(lambda body: Reply(status=500)) as server:
        for _ in range(2):  # fresh, then resumed with nothing left to do
            assert _main(*_llm_args(source, out, server)) == 1
            err = capsys.readouterr().err
            assert f"every judgement in {out} failed (3 dialogues)" in err and "--retry-failed" in err
        # No answer ever settled structured output, so each dialogue tried json_schema, json_object and none once.
        assert len(server.requests) == 3 * 3


def test_a_short_self_consistency_set_is_flagged_in_the_output(tmp_path, make_episode, make_output, capsys):
    source, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    _write_dialogues(source, [make_episode(["Student 0", "What is 3 times 4?", "12", "Good.", "10", "Yes!"])])
    with LocalChatServer(lambda body: Reply(texts=(make_output(), make_output()))) as server:  # 2, whatever n says
        assert _main(*_llm_args(source, out, server, "--samples", "3", "--parse-retries", "0")) == 1
    (row,) = _rows(out)
    assert (row["judge_ok"], row["attempts"]) == (0, 2) and "2 of 3 samples" in row["error"]


@pytest.mark.parametrize("content", ["", "\n  \n"])
def test_an_empty_input_is_an_error(tmp_path, capsys, content):
    source, out = tmp_path / "empty.jsonl", tmp_path / "out.jsonl"
    source.write_text(content)
    assert _main("judge", source, "-o", out, "--backend", "offline", "--no-progress") == 2
    assert capsys.readouterr().err == f"error: no dialogues in {source}.\n" and not out.exists()


def test_a_damaged_line_inside_the_results_is_a_located_error(tmp_path, make_episode):
    episodes = [make_episode([f"Help {i}?", "What is 3 times 4?", "12"], end_reason="turn_limit") for i in range(3)]
    source, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    _write_dialogues(source, episodes)
    asyncio.run(judge_file(HeuristicJudge(), source, out))
    lines = out.read_text().splitlines()
    out.write_text("\n".join([lines[0], lines[1][:30], lines[2]]) + "\n")  # not a kill: a kill cuts only the end
    with pytest.raises(InputError, match=r"out.jsonl:2: not valid JSON"):
        asyncio.run(judge_file(HeuristicJudge(), source, out))


def test_a_server_that_ignores_n_still_gives_every_sample_and_is_named(tmp_path, make_episode, make_output, capsys):
    episodes = [make_episode([f"Student {i}", "What is 3 times 4?", "12", "Good.", "10", "Yes!"]) for i in range(2)]
    source, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    _write_dialogues(source, episodes)
    with LocalChatServer(lambda body: Reply(texts=(make_output(),))) as server:  # one choice, whatever n asks for
        assert _main(*_llm_args(source, out, server, "--samples", "3", "--concurrency", "1")) == 0
    assert [body["n"] for body in server.requests] == [3, 1, 1, 1, 1, 1]
    assert all(row["judge_ok"] == 1 and row["attempts"] == 3 for row in _rows(out))
    printed = capsys.readouterr().out
    assert printed.count("note: the endpoint ignores n") == 1 and "3 samples of each dialogue" in printed


def test_the_structured_output_the_server_took_is_said(tmp_path, make_episode, make_output, capsys):
    episodes = [make_episode([f"Student {i}", "What is 3 times 4?", "12", "Good.", "10", "Yes!"]) for i in range(2)]
    source, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    _write_dialogues(source, episodes)

    def respond(body):  # a server without json_schema, as llama-cpp-python's is
        if body["response_format"]["type"] == "json_schema":
            return Reply(status=400, error_message="json_schema is not supported")
        return make_output()

    with LocalChatServer(respond) as server:
        assert _main(*_llm_args(source, out, server, "--concurrency", "1")) == 0
    assert [body["response_format"]["type"] for body in server.requests] == ["json_schema", "json_object", "json_object"]
    assert ("structured output: json_object (the server refused json_schema: http_400: "
            in capsys.readouterr().out)


def test_a_judge_whose_replies_fail_to_parse_is_named_even_when_retries_rescue_it(tmp_path, make_episode, make_output,
                                                                                 capsys):
    episodes = [make_episode([f"Student {i}", "What is 3 times 4?", "12"], end_reason="turn_limit") for i in range(3)]
    source, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    _write_dialogues(source, episodes)
    seen = set()

    def respond(body):  # every dialogue's first reply is junk, its retry valid
        key = body["messages"][1]["content"]
        if key in seen:
            return make_output()
        seen.add(key)
        return '{"acc": "10"}'

    with LocalChatServer(respond) as server:
        assert _main(*_llm_args(source, out, server, "--concurrency", "1")) == 0  # every judgement is ok in the end
    printed = capsys.readouterr().out
    assert "3 judged (3 ok, 0 failed)" in printed
    assert "judge replies that did not parse: 3/6 (50%)" in printed
    assert [(r["judge_replies"], r["judge_unparsed"]) for r in _rows(out)] == [(2, 1)] * 3


def test_a_rerun_with_another_judge_model_or_mode_is_refused(tmp_path, make_episode, make_output, capsys):
    source, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    _write_dialogues(source, [make_episode(["Student 0", "What is 3 times 4?", "12"], end_reason="turn_limit")])
    with LocalChatServer(lambda body: make_output()) as server:
        assert _main(*_llm_args(source, out, server)) == 0
        judged = out.read_text()
        assert json.loads((tmp_path / "out.jsonl.settings.json").read_text())["structured_output"] == "auto"
        capsys.readouterr()
        assert _main(*_llm_args(source, out, server, "--structured-output", "json_object")) == 2
        assert "holds another run's judgements (settings differ: structured_output)" in capsys.readouterr().err
        other = [a if a != "m" else "other-model" for a in _llm_args(source, out, server)]
        assert _main(*other) == 2
        assert "(settings differ: model); pick another -o" in capsys.readouterr().err
        assert out.read_text() == judged and len(server.requests) == 1
        assert _main(*_llm_args(source, out, server, "--concurrency", "4")) == 0  # how it runs may change
