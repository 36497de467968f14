"""eval-tutor end to end on CPU: files, the table recomputed from the JSONL, cross-simulator, resume, progress."""

import json
import statistics

import pytest

from pearl_verl.dims import DIMENSIONS
from pearl_verl.llm.local_server import LocalChatServer

T_975 = {5: 2.571, 11: 2.201}  # Student-t table, two-sided 95%, by degrees of freedom
TUTORS = ["--tutor", "name=socratic,scripted=socratic", "--tutor", "name=leaking,scripted=leaking"]


@pytest.fixture(scope="module")
def offline_run(tmp_path_factory, fx):
    from pearl_verl.eval.__main__ import main

    out = tmp_path_factory.mktemp("eval-tutor")
    code = main(["eval-tutor", str(fx.GSM8K), "--limit", "6", *TUTORS, "--judge", "offline", "--out", str(out)])
    assert code == 0
    return out


def test_files_are_written(fx, offline_run):
    for name in ("manifest.json", "results.jsonl", "report.md", "summary.json", "radar.png", "bars.png"):
        assert (offline_run / name).stat().st_size > 0, name
    for name in ("radar.png", "bars.png"):
        import matplotlib.image

        image = matplotlib.image.imread(offline_run / name)
        assert image.shape[0] > 400 and image.shape[1] > 400  # a readable figure, not an empty stub
    rows = fx.read_jsonl(offline_run / "results.jsonl")
    assert len(rows) == 12 and len({r["id"] for r in rows}) == 12
    assert {r["tutor"] for r in rows} == {"socratic", "leaking"}


def test_matched_conditions_across_tutors(fx, offline_run):
    rows = fx.read_jsonl(offline_run / "results.jsonl")
    by_item = {}
    for row in rows:
        by_item.setdefault(row["item_id"], []).append(row)
    for pair in by_item.values():
        assert len(pair) == 2
        a, b = pair
        assert a["seed"] == b["seed"]
        assert a["episode"]["problem"] == b["episode"]["problem"]
        assert a["episode"]["condition"] == b["episode"]["condition"]
        assert a["episode"]["turns"][0] == b["episode"]["turns"][0]  # the same student opening
    manifest = json.loads((offline_run / "manifest.json").read_text())
    assert manifest["protocol"]["max_turns"] == 20 and manifest["protocol"]["top_k"] == 50
    assert [i["item_id"] for i in manifest["items"]] == sorted(by_item)


def test_table_numbers_equal_what_the_jsonl_holds(fx, offline_run):
    rows = fx.read_jsonl(offline_run / "results.jsonl")
    report = (offline_run / "report.md").read_text()
    assert "NOT the paper's judge" in report
    header, table = fx.markdown_rows(report, "Tutor")
    assert header.split("|")[2].strip() == "Acc" and "Rounds" in header
    assert [r[0] for r in table] == ["socratic", "leaking"]
    for cells in table:
        mine = [r for r in rows if r["tutor"] == cells[0]]
        columns = {
            **{d: [100 * r["judge"][d] for r in mine] for d in DIMENSIONS},
            "avg": [100 * sum(r["judge"][d] for d in DIMENSIONS) / 8 for r in mine],
            "rounds": [sum(t["role"] == "tutor" for t in r["episode"]["turns"]) for r in mine],
        }
        for index, values in enumerate(columns.values(), start=1):
            mean, half = fx.parse_cell(cells[index])
            assert mean == pytest.approx(statistics.fmean(values), abs=0.051)
            expected_half = T_975[len(values) - 1] * statistics.stdev(values) / len(values) ** 0.5
            assert half == pytest.approx(expected_half, abs=0.051 + 2e-4 * expected_half)  # 3-digit t table
        assert cells[-2:] == [str(len(mine)), "0"]


def test_summary_json_matches_the_table(fx, offline_run):
    summary = json.loads((offline_run / "summary.json").read_text())
    _, table = fx.markdown_rows((offline_run / "report.md").read_text(), "Tutor")
    for group, cells in zip(summary["groups"], table):
        assert group["tutor"] == cells[0]
        assert f"{group['avg']['mean']:.1f}" == cells[9].split(" ")[0]


def test_rerun_resumes_without_running_anything(fx, offline_run, run_cli, capsys):
    before = (offline_run / "results.jsonl").read_text()
    assert run_cli("eval-tutor", fx.GSM8K, "--limit", "6", *TUTORS, "--judge", "offline", "--out", offline_run) == 0
    assert (offline_run / "results.jsonl").read_text() == before
    assert "0 dialogues run (0 ok, 0 flagged), 12 already done" in capsys.readouterr().out


def test_other_settings_in_the_same_directory_are_refused(fx, offline_run, run_cli, capsys):
    code = run_cli(
        "eval-tutor", fx.GSM8K, "--limit", "6", *TUTORS, "--judge", "offline", "--max-turns", "5", "--out", offline_run
    )
    assert code == 2 and "different protocols" in capsys.readouterr().err
    code = run_cli("eval-tutor", fx.GSM8K, "--limit", "4", *TUTORS, "--judge", "offline", "--out", offline_run)
    assert code == 2 and "items drawn from other problems" in capsys.readouterr().err


def test_a_tutor_added_later_gets_the_same_items(fx, tmp_path, run_cli):
    out = tmp_path / "run"
    assert (
        run_cli(
            "eval-tutor",
            fx.GSM8K,
            "--limit",
            "3",
            "--tutor",
            "name=socratic,scripted=socratic",
            "--judge",
            "offline",
            "--out",
            out,
        )
        == 0
    )
    # no problem files: the stored matched items are reused
    assert run_cli("eval-tutor", "--tutor", "name=leaking,scripted=leaking", "--judge", "offline", "--out", out) == 0
    rows = fx.read_jsonl(out / "results.jsonl")
    items = {
        t: {r["item_id"]: r["episode"]["condition"] for r in rows if r["tutor"] == t} for t in ("socratic", "leaking")
    }
    assert items["socratic"] == items["leaking"] and len(items["socratic"]) == 3
    assert "| leaking |" in (out / "report.md").read_text()


def test_progress_bar_and_end_summary(fx, tmp_path, run_cli, capsys):
    assert (
        run_cli(
            "eval-tutor",
            fx.GSM8K,
            "--limit",
            "2",
            "--tutor",
            "name=s,scripted=socratic",
            "--judge",
            "offline",
            "--progress",
            "on",
            "--out",
            tmp_path,
        )
        == 0
    )
    captured = capsys.readouterr()
    assert "eval-tutor: 100%" in captured.err and "2/2" in captured.err
    assert "2 dialogues run (2 ok, 0 flagged)" in captured.out and "| s |" in captured.out


def test_report_only_rebuilds_from_the_results(fx, offline_run, run_cli):
    (offline_run / "report.md").unlink()
    assert run_cli("eval-tutor", "--out", offline_run, "--report-only") == 0
    assert "| socratic |" in (offline_run / "report.md").read_text()


def test_cross_simulator_table_with_the_baselines(fx, tmp_path, run_cli):
    with LocalChatServer(fx.role_play_student) as student:
        code = run_cli(
            "eval-tutor",
            fx.GSM8K,
            "--limit",
            "3",
            *TUTORS,
            "--judge",
            "offline",
            "--max-turns",
            "4",
            "--simulator",
            "pearl",
            "--simulator",
            "mathdial",
            "--simulator",
            "socraticlm",
            "--student-base-url",
            student.base_url,
            "--student-model",
            "student",
            "--out",
            tmp_path,
        )
        assert code == 0 and len(student.requests) > 0
    rows = fx.read_jsonl(tmp_path / "results.jsonl")
    assert len(rows) == 18 and {r["simulator"] for r in rows} == {"pearl", "mathdial", "socraticlm"}
    report = (tmp_path / "report.md").read_text()
    header, table = fx.markdown_rows(report, "Student Simulator")
    assert header.startswith("| Student Simulator | socratic | leaking | Gain |")
    assert [r[0] for r in table] == ["Our Simulator (PEARL)", "MathDial Student", "SocraticLM Student"]
    for cells, simulator in zip(table, ("pearl", "mathdial", "socraticlm")):
        avg = {}
        for r in rows:
            if r["simulator"] == simulator:
                avg.setdefault(r["item_id"], {})[r["tutor"]] = 100 * sum(r["judge"][d] for d in DIMENSIONS) / 8
        gain = statistics.fmean(v["leaking"] - v["socratic"] for v in avg.values())
        assert fx.parse_cell(cells[3])[0] == pytest.approx(gain, abs=0.051)
        assert fx.parse_cell(cells[1])[0] == pytest.approx(
            statistics.fmean(v["socratic"] for v in avg.values()), abs=0.051
        )
    full_header, full = fx.markdown_rows(report.split("## Cross-simulator evaluation")[1], "Tutor")
    assert "Student Simulator" in full_header and len(full) == 6


def test_baselines_without_a_student_endpoint_are_refused(fx, tmp_path, run_cli, capsys):
    code = run_cli(
        "eval-tutor",
        fx.GSM8K,
        "--limit",
        "1",
        *TUTORS,
        "--judge",
        "offline",
        "--simulator",
        "mathdial",
        "--out",
        tmp_path,
    )
    assert code == 2 and "--student-base-url" in capsys.readouterr().err


@pytest.mark.parametrize("judge", ["offline", "none"])
def test_a_failing_tutor_endpoint_flags_dialogues_and_they_can_be_retried(fx, tmp_path, run_cli, judge):
    from pearl_verl.llm.local_server import Reply

    healthy = {"on": False}

    def respond(body):
        return "What do you know so far? [END_OF_SESSION]" if healthy["on"] else Reply(status=400)

    with LocalChatServer(respond) as server:
        spec = f"name=ep,base_url={server.base_url},model=tutor"
        args = ["eval-tutor", fx.GSM8K, "--limit", "2", "--tutor", spec, "--judge", judge, "--out", tmp_path]
        assert run_cli(*args) == 1  # unjudged too: a dialogue whose tutor failed is not "ok"
        rows = fx.read_jsonl(tmp_path / "results.jsonl")
        assert [r["episode"]["end_reason"] for r in rows] == ["tutor_error"] * 2
        assert all(r["judge"] is None if judge == "none" else r["judge"]["judge_ok"] == 0 for r in rows)
        if judge == "offline":
            assert "| ep |" not in (tmp_path / "report.md").read_text()  # flagged dialogues are never scored
        healthy["on"] = True
        assert run_cli(*args, "--retry-failed") == 0
    final = {r["id"]: r for r in fx.read_jsonl(tmp_path / "results.jsonl")}
    assert len(final) == 2 and all(r["episode"]["end_reason"] != "tutor_error" for r in final.values())
    if judge == "offline":
        assert all(r["judge"]["judge_ok"] == 1 for r in final.values())
        assert "| ep |" in (tmp_path / "report.md").read_text()


def test_tutor_replies_cut_at_max_tokens_are_counted_per_dialogue_and_reported(fx, tmp_path, run_cli, capsys):
    from pearl_verl.llm.local_server import Reply

    def rambling(body):  # a weak model's first message runs into the cap; its second is whole
        if sum(m["role"] == "assistant" for m in body["messages"]) == 0:
            return Reply(text="Let us think about the apples and the boxes and", finish_reason="length")
        return "What do you get when you check it again? [END_OF_SESSION]"

    with LocalChatServer(rambling) as server:
        spec = f"name=rambler,base_url={server.base_url},model=tutor"
        args = ["eval-tutor", fx.GSM8K, "--limit", "3", "--tutor", spec, "--tutor", "name=s,scripted=socratic",
                "--judge", "offline", "--max-tokens", "16", "--concurrency", "3", "--out", tmp_path]
        assert run_cli(*args) == 0
    err = capsys.readouterr().err
    rows = fx.read_jsonl(tmp_path / "results.jsonl")
    assert {r["tutor_cut_replies"] for r in rows if r["tutor"] == "rambler"} == {1}  # one per dialogue, not shared
    assert {r["tutor_cut_replies"] for r in rows if r["tutor"] == "s"} == {0}
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["tutor_cut_replies"] == {"rambler": {"cut": 3, "replies": 6}, "s": {"cut": 0, "replies": sum(
        sum(t["role"] == "tutor" for t in r["episode"]["turns"]) for r in rows if r["tutor"] == "s")}}
    assert "tutor replies cut at --max-tokens 16: rambler 3/6 (50%)." in (tmp_path / "report.md").read_text()
    assert "warning: tutor replies cut at --max-tokens 16: rambler 3/6 (50%); those messages end mid-way" in err


def test_an_llm_judge_whose_replies_fail_to_parse_is_named_in_the_report(fx, tmp_path, run_cli):
    from pearl_verl.faults.responders import judge_reply

    seen = set()

    def judge(body):  # each dialogue's first reply copies the placeholder; the retry is a real judgement
        key = body["messages"][1]["content"]
        if key in seen:
            return judge_reply(body)
        seen.add(key)
        return '{"acc": {"statements_correct": {"score": 2, "rationale": "<one or two sentences>"}}}'

    with LocalChatServer(judge) as server:
        args = ["eval-tutor", fx.GSM8K, "--limit", "2", "--tutor", "name=s,scripted=socratic", "--judge", "llm",
                "--judge-base-url", server.base_url, "--judge-model", "j", "--judge-concurrency", "1", "--out", tmp_path]
        assert run_cli(*args) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["judge_replies"] == {"replies": 4, "unparsed": 2}
    assert "judge replies that did not parse: 2/4 (50%)." in (tmp_path / "report.md").read_text()
