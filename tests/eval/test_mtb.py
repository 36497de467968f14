"""MathTutorBench: examples from its data formats, its metrics by hand, and eval-mtb end to end."""

import json

import pytest

from pearl_verl.eval.mtb import (
    PEDAGOGY_TASKS,
    TASKS,
    build_examples,
    final_number,
    is_question,
    reference_questions,
    rm_conversation,
    step_number,
    task_metrics,
    yes_no,
)


def test_nine_tasks():
    assert len(TASKS) == 9 and len(PEDAGOGY_TASKS) == 4


def test_question_match_follows_the_benchmark_rule():
    assert is_question("Can you tell me more")  # a question word, no question mark
    assert is_question("Tell me what you did?")
    assert not is_question("Great job. The answer is 10.")
    assert not is_question("Somehow it works.")  # 'how' inside a word is not the token 'how'


def test_parsers():
    assert reference_questions("How many? ** 3 + 4 = 7\nWhat next? ** 7 * 2 = 14\n#### 14") == [
        "How many?",
        "What next?",
    ]
    assert final_number("so 12 + 6 = 18. Final Answer: $1,250") == "1250"
    assert final_number("we get 3 then 42") == "42" and final_number("no digits") is None
    assert yes_no("Yes, step 2 is wrong") is True and yes_no("no.") is False and yes_no("It is wrong") is None
    assert step_number("A: 3") == 3 and step_number("none") is None


def rows(task, pairs):
    return [{"id": str(i), "task": task, "response": r, "target": t, "ok": True} for i, (r, t) in enumerate(pairs)]


def test_solution_correctness_f1_by_hand():
    # gold Yes,Yes,No,No ; said Yes,<unparsed>,Yes,No -> pred Yes,No(wrong),Yes,No: TP 1, FP 1, FN 1
    metrics = task_metrics(
        "solution_correctness",
        rows("solution_correctness", [("Yes", "Yes"), ("maybe", "Yes"), ("Yes", "No"), ("No", "No")]),
    )
    assert metrics["f1"] == pytest.approx(2 * 1 / (2 * 1 + 1 + 1))
    assert metrics["accuracy"] == 0.5 and metrics["precision"] == 0.5 and metrics["recall"] == 0.5
    assert metrics["unparsed"] == 1


def test_mistake_location_micro_and_macro_f1_by_hand():
    # gold 2,0,1,0 ; pred 2,0,0,<unparsed>
    metrics = task_metrics(
        "mistake_location", rows("mistake_location", [("2", "2"), ("0", "0"), ("0", "1"), ("?", "0")])
    )
    assert metrics["f1_micro"] == 0.5  # 2 of 4 right
    # classes: 2 -> F1 1; 0 -> tp1 fp1 fn1 -> 0.5; 1 -> 0; -1 (unparsed) -> 0
    assert metrics["f1_macro"] == pytest.approx((1 + 0.5 + 0 + 0) / 4)


def test_answer_accuracy_uses_math_verify():
    metrics = task_metrics("problem_solving", rows("problem_solving", [("Final answer: 18.0", "18"), ("it is 7", "8")]))
    assert metrics["accuracy"] == 0.5


def test_socratic_bleu_is_one_for_a_reference_question_and_takes_the_best_line():
    target = json.dumps(["How many eggs does Janet sell?", "How much does she make?"])
    perfect = task_metrics(
        "socratic_questioning", rows("socratic_questioning", [("How many eggs does Janet sell?", target)])
    )
    assert perfect["bleu"] == pytest.approx(1.0)
    best = task_metrics(
        "socratic_questioning", rows("socratic_questioning", [("zzz\nHow many eggs does Janet sell?", target)])
    )
    assert best["bleu"] == pytest.approx(1.0)
    poor = task_metrics("socratic_questioning", rows("socratic_questioning", [("Bananas are yellow.", target)]))
    assert poor["bleu"] < 0.2


def test_pedagogy_metrics_are_named_apart():
    data = rows("scaffolding_generation", [("What did you try?", "x"), ("The answer is 4.", "y")])
    assert task_metrics("scaffolding_generation", data) == {"n": 2, "flagged": 0, "question_match_rate": 0.5}
    data[0]["win"], data[1]["win"] = True, False
    metrics = task_metrics("scaffolding_generation", data)
    assert metrics["question_match_rate"] == 0.5 and metrics["win_rate"] == 0.5 and metrics["win_rate_n"] == 2


def test_examples_from_the_data_formats(fx):
    stepverify = json.loads((fx.MTB / "stepverify" / "dataset.json").read_text())
    correctness = build_examples("solution_correctness", fx.MTB)
    assert len(correctness) == 2 * len(stepverify)
    assert [e.target for e in correctness[:2]] == ["Yes", "No"]
    location = build_examples("mistake_location", fx.MTB)
    assert location[0].target == str(stepverify[0]["incorrect_index"] + 1) and location[1].target == "0"
    assert "Step 1 - " in location[0].prompt
    correction = build_examples("mistake_correction", fx.MTB)
    assert len(correction) == len(stepverify) and correction[0].target == "10"
    bridge = json.loads((fx.MTB / "mathtutorbench" / "mathdial_bridge.json").read_text())
    scaffold = build_examples("scaffolding_generation", fx.MTB)
    assert scaffold[0].target == bridge[0]["dialog_history"][-1]["text"]  # the human teacher's next turn
    assert scaffold[0].target not in scaffold[0].prompt  # which the model does not see
    conversation = rm_conversation(scaffold[0].context, "My reply?", "sys")
    assert [m["role"] for m in conversation] == ["system", "user", "assistant", "user", "assistant"]
    assert conversation[-1]["content"] == "My reply?"
    assert build_examples("problem_solving", fx.MTB, limit=2)[1].target == "3"


def scripted_model(body):
    prompt = body["messages"][-1]["content"]
    if prompt.endswith("Teacher (at most two sentences):"):
        return "What do you think the next step is?"
    if "Questions:" in prompt:
        return "How many eggs does Janet sell? How much does Janet make?"
    if "step number" in prompt:
        return "1"
    if "incorrect?" in prompt:
        return "Yes"
    if "Final" in prompt:
        return "Let me compute. Final Answer: 10"
    raise AssertionError(f"unexpected prompt {prompt[:80]!r}")


def test_eval_mtb_end_to_end_with_win_rates(fx, tmp_path, run_cli, tiny_reward_model, capsys):
    from pearl_verl.llm.local_server import LocalChatServer

    with LocalChatServer(scripted_model) as server:
        code = run_cli(
            "eval-mtb",
            "--data-dir",
            fx.MTB,
            "--model-base-url",
            server.base_url,
            "--model",
            "m",
            "--ped-rm-path",
            tiny_reward_model,
            "--out",
            tmp_path,
        )
        assert code == 0
        assert server.requests[0]["temperature"] == 0.0 and server.requests[0]["stop"]
    summary = json.loads((tmp_path / "mtb_summary.json").read_text())
    tasks = summary["tasks"]
    assert set(tasks) == set(TASKS)
    generations = fx.read_jsonl(tmp_path / "mtb_generations.jsonl")
    assert {g["row_kind"] for g in generations} == {"mtb_generation"}
    for task in PEDAGOGY_TASKS:
        mine = [g for g in generations if g["task"] == task]
        assert tasks[task]["question_match_rate"] == 1.0
        assert tasks[task]["win_rate"] == pytest.approx(sum(g["win"] for g in mine) / len(mine))
        assert all(g["win"] == (g["rm_scores"][0] > g["rm_scores"][1]) for g in mine)
    assert tasks["solution_correctness"]["recall"] == 1.0  # always "Yes"
    report = (tmp_path / "mtb_report.md").read_text()
    assert "WIN RATE" in report and "QUESTION-MATCH RATE" in report and "NOT a win rate" in report
    capsys.readouterr()
    assert (
        run_cli(
            "eval-mtb",
            "--data-dir",
            fx.MTB,
            "--model-base-url",
            "http://127.0.0.1:9/v1",
            "--model",
            "m",
            "--ped-rm-path",
            tiny_reward_model,
            "--out",
            tmp_path,
        )
        == 0
    )  # resumed: no call needed
    assert f"0 examples run now, {len(generations)} already done" in capsys.readouterr().out


def test_without_a_reward_model_only_the_question_match_rate_is_reported(fx, tmp_path, run_cli):
    from pearl_verl.llm.local_server import LocalChatServer

    with LocalChatServer(scripted_model) as server:
        assert (
            run_cli(
                "eval-mtb",
                "--data-dir",
                fx.MTB,
                "--model-base-url",
                server.base_url,
                "--model",
                "m",
                "--tasks",
                "pedagogy_following,problem_solving",
                "--limit",
                "2",
                "--out",
                tmp_path,
            )
            == 0
        )
    tasks = json.loads((tmp_path / "mtb_summary.json").read_text())["tasks"]
    assert set(tasks) == {"pedagogy_following", "problem_solving"}
    assert "win_rate" not in tasks["pedagogy_following"] and tasks["pedagogy_following"]["n"] == 2
    assert "Not computed: no pedagogical reward model" in (tmp_path / "mtb_report.md").read_text()


def test_the_whole_data_folder_builds_every_task(fx):
    sizes = {task: len(build_examples(task, fx.DATA)) for task in TASKS}
    assert sizes["problem_solving"] == 1319 and sizes["socratic_questioning"] == 1319
    assert sizes["solution_correctness"] == sizes["mistake_location"] == 2 * 1002
    assert sizes["mistake_correction"] == 1002
    assert sizes["scaffolding_generation"] == sizes["pedagogy_following"] == 1150
    assert sizes["scaffolding_generation_hard"] == sizes["pedagogy_following_hard"] == 327
