"""eval-simulator end to end: planned labels offline, an LLM annotator over HTTP, resume, controllability plot."""

import json

from pearl_verl.llm.local_server import LocalChatServer


def test_planned_labels_from_an_eval_tutor_run(fx, tmp_path, run_cli):
    run = tmp_path / "run"
    assert (
        run_cli(
            "eval-tutor",
            fx.GSM8K,
            "--limit",
            "4",
            "--ability",
            "all",
            "--tutor",
            "name=s,scripted=socratic",
            "--judge",
            "none",
            "--out",
            run,
        )
        == 0
    )
    out = tmp_path / "sim"
    assert run_cli("eval-simulator", run / "results.jsonl", "--annotator", "planned", "--out", out) == 0
    for name in ("annotations.jsonl", "simulator_report.md", "simulator_summary.json", "controllability.png"):
        assert (out / name).stat().st_size > 0, name
    summary = json.loads((out / "simulator_summary.json").read_text())
    assert summary["source"] == "planned labels, not annotations"
    assert {row["row_kind"] for row in fx.read_jsonl(out / "annotations.jsonl")} == {"annotation"}
    pearl = summary["simulators"]["pearl"]
    assert pearl["dialogues"] == 12 and pearl["flagged"] == 0
    results = fx.read_jsonl(run / "results.jsonl")
    replies = sum(len(r["episode"]["student_trace"]) - 1 for r in results)
    assert pearl["diversity"]["turns"] == replies
    assert set(pearl["controllability"]) == {"low", "medium", "high"}
    assert "PLANNED LABELS, NOT ANNOTATIONS" in (out / "simulator_report.md").read_text()
    assert pearl["student_fallbacks"]["label_turns"] == 0  # the offline student asks no model: nothing to count


def test_a_simulator_whose_replies_mostly_fell_back_is_named_and_fails(fx, tmp_path, run_cli, capsys):
    run = tmp_path / "run"
    tutor = ["--tutor", "name=s,scripted=socratic", "--judge", "none", "--max-turns", "3"]
    assert run_cli("eval-tutor", fx.GSM8K, "--limit", "2", *tutor, "--out", run) == 0
    weak = tmp_path / "weak.jsonl"  # the same dialogues, as an LLM student whose replies all fell back would leave them
    with weak.open("w") as handle:
        for row in fx.read_jsonl(run / "results.jsonl"):
            for state in row["episode"]["student_trace"][1:]:
                state["plan_source"], state["reply_source"] = "llm", "fallback"
            handle.write(json.dumps({**row, "id": "weak-" + row["id"], "simulator": "weak"}) + "\n")
    out = tmp_path / "sim"
    code = run_cli("eval-simulator", run / "results.jsonl", weak, "--annotator", "planned", "--out", out)
    err = capsys.readouterr().err
    assert code == 1
    assert "weak: error: 100% of the student replies fell back to the rules (above --max-fallback-rate 0.5)" in err
    assert "pearl:" not in err
    summary = json.loads((out / "simulator_summary.json").read_text())["simulators"]
    replies = summary["weak"]["student_fallbacks"]["message_turns"]
    assert replies > 0 and summary["weak"]["student_fallbacks"]["message_fallbacks"] == replies
    assert summary["weak"]["student_fallbacks"]["label_fallbacks"] == 0
    assert f"weak: student replies that fell back to the rules: labels 0/{replies} (0%), messages {replies}/{replies}" \
        in (out / "simulator_report.md").read_text()
    assert run_cli("eval-simulator", run / "results.jsonl", weak, "--annotator", "planned", "--out", out,
                   "--max-fallback-rate", "1") == 0


def test_llm_annotator_endpoint_with_a_flagged_dialogue_and_resume(fx, tmp_path, run_cli, capsys):
    run = tmp_path / "run"
    assert (
        run_cli(
            "eval-tutor",
            fx.GSM8K,
            "--limit",
            "3",
            "--tutor",
            "name=s,scripted=socratic",
            "--judge",
            "none",
            "--max-turns",
            "3",
            "--out",
            run,
        )
        == 0
    )
    results = fx.read_jsonl(run / "results.jsonl")
    broken_problem = results[0]["episode"]["problem"]["question"]

    def annotate(body):
        user = body["messages"][1]["content"]
        replies = int(user.rsplit("Annotate all ", 1)[1].split()[0])
        if broken_problem in user:
            return "I think they did fine."
        return json.dumps(
            {"turns": [{"turn": i, "attempt": "partial", "labels": ["uncertainty"]} for i in range(1, replies + 1)]}
        )

    out = tmp_path / "sim"
    with LocalChatServer(annotate, model="strong") as server:
        args = [
            "eval-simulator",
            run / "results.jsonl",
            "--annotator",
            "llm",
            "--annotator-base-url",
            server.base_url,
            "--annotator-model",
            "strong",
            "--out",
            out,
        ]
        assert run_cli(*args) == 1  # one dialogue flagged
        assert server.requests[0]["temperature"] == 0.0
        summary = json.loads((out / "simulator_summary.json").read_text())["simulators"]["pearl"]
        assert (summary["annotated"], summary["flagged"]) == (2, 1)
        assert summary["diversity"]["attempt_distribution"]["partial"] == 1.0
        assert summary["diversity"]["label_frequencies"]["uncertainty"] == 1.0
        calls = len(server.requests)
        capsys.readouterr()
        assert run_cli(*args) == 1  # resume: the flagged one stays flagged without --retry-failed
        assert len(server.requests) == calls
        assert "0 annotated now, 3 already done" in capsys.readouterr().out
    assert "annotations by llm:strong" in (out / "simulator_report.md").read_text()
    with LocalChatServer(annotate) as server:
        code = run_cli("eval-simulator", run / "results.jsonl", "--annotator", "planned", "--out", out)
    assert code == 2  # planned labels never mix with annotations in one file
