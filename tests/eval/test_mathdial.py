"""MathDial success@k / telling@k: the harness's rules, the round alignment of our episodes, the CLI."""

import json
import math

import pytest

from pearl_verl.dialogue.episode import EpisodeRecord
from pearl_verl.dialogue.problem import Problem
from pearl_verl.eval.mathdial import Indices, curves, episode_indices, human_indices

PROBLEM = Problem("p", "What is 2 + 4?", "2 + 4 = 6", "6", "mathdial")


def conversation(*utterances):
    return "|EOM|".join(utterances)


def test_student_solving_before_any_telling():
    row = {
        "ground_truth": "2 + 4 = 6\n6",
        "conversation": conversation(
            "Teacher: (probing)Can you walk me through?",
            "Student: My solution: 2+3=5",
            "Teacher: (focus)Why did you include 3?",
            "Student: Oh I see, sorry.",
            "Teacher: (generic)What is the answer?",
            "Student: My corrected answer is 2+4=6",
            "Teacher: (generic)Good job, the answer is 6.",
            "Student: Thanks",
        ),
    }
    indices = human_indices(row)
    assert (indices.student, indices.teacher) == (2, 3)
    assert [indices.success_at(k) for k in (1, 2, 3)] == [False, True, True]
    assert [indices.telling_at(k) for k in (1, 2, 3)] == [False, False, False]


def test_teacher_telling_first():
    row = {
        "ground_truth": "2 + 4 = 6\n6",
        "conversation": conversation(
            "Teacher: Can you walk me through?",
            "Student: 2+3=5",
            "Teacher: Why 3?",
            "Student: Sorry.",
            "Teacher: (telling)It is 6, just do 2+4",
            "Student: Thanks",
            "Teacher: Welcome",
            "Student: I will remember the answer is 6.",
        ),
    }
    indices = human_indices(row)
    assert (indices.student, indices.teacher) == (3, 2)
    assert [indices.success_at(k) for k in (1, 2, 3)] == [False, False, True]
    assert [indices.telling_at(k) for k in (1, 2, 3)] == [False, True, True]


def test_our_episodes_count_the_tutors_first_turn_as_teacher_index_one(make_episode):
    texts = ["I got 2 + 3 = 5.", "Check the second number.", "Oh, 2 + 4 = 6!", "Yes, it is 6."]
    indices = episode_indices(make_episode(texts, problem=PROBLEM))
    # student: utterance 1 (0-based) states 6; tutor turn 1 (0-based) states 6 -> teacher index 2
    assert (indices.student, indices.teacher) == (1, 2)
    assert indices.success_at(1) and not indices.telling_at(1)
    never = episode_indices(make_episode(texts[:2], "turn_limit", problem=PROBLEM))
    assert never.student == math.inf and never.teacher == math.inf and not never.telling_at(7)


def test_curves_are_proportions_over_dialogues():
    result = curves([Indices(0, math.inf), Indices(2, 1), Indices(math.inf, 3)], max_k=3)
    assert [e.mean for e in result["success"]] == pytest.approx([1 / 3, 2 / 3, 2 / 3])
    assert [e.mean for e in result["telling"]] == pytest.approx([1 / 3, 1 / 3, 2 / 3])
    with pytest.raises(ValueError, match="at least one"):
        curves([], 3)


def test_eval_mathdial_cli_on_eval_tutor_dialogues_and_human_teachers(fx, tmp_path, run_cli):
    from pearl_verl.llm.local_server import LocalChatServer

    run = tmp_path / "run"
    with LocalChatServer(fx.role_play_student) as student:
        assert (
            run_cli(
                "eval-tutor",
                fx.MATHDIAL,
                "--limit",
                "4",
                "--simulator",
                "mathdial",
                "--judge",
                "none",
                "--tutor",
                "name=s,scripted=socratic",
                "--tutor",
                "name=l,scripted=leaking",
                "--max-turns",
                "4",
                "--student-base-url",
                student.base_url,
                "--student-model",
                "student",
                "--out",
                run,
            )
            == 0
        )
    assert (
        run_cli(
            "eval-mathdial",
            "--results",
            run / "results.jsonl",
            "--human",
            fx.MATHDIAL,
            "--max-k",
            "5",
            "--out",
            tmp_path,
        )
        == 0
    )
    summary = json.loads((tmp_path / "mathdial_summary.json").read_text())["tutors"]
    assert set(summary) == {"Human teachers (MathDial data)", "s", "l"}
    assert summary["Human teachers (MathDial data)"]["success"][0]["n"] == 20
    results = fx.read_jsonl(run / "results.jsonl")
    for tutor in ("s", "l"):
        found = [episode_indices(EpisodeRecord.from_dict(r["episode"])) for r in results if r["tutor"] == tutor]
        for k in range(1, 6):
            assert summary[tutor]["success"][k - 1]["mean"] == pytest.approx(sum(i.success_at(k) for i in found) / 4)
            assert summary[tutor]["telling"][k - 1]["mean"] == pytest.approx(sum(i.telling_at(k) for i in found) / 4)
    # the leaking script states the answer in its first turn, the Socratic one never does
    assert summary["l"]["telling"][0]["mean"] > summary["s"]["telling"][0]["mean"] == 0.0
    report = (tmp_path / "mathdial_report.md").read_text()
    assert "## success@k" in report and "## telling@k" in report
    assert (tmp_path / "mathdial_curves.png").stat().st_size > 10_000
    assert "not judged" in (run / "report.md").read_text()
