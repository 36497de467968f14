"""The cold start from MathDial's human teachers: what a pretrained tutor imitates before RL."""

import json

import pytest

from pearl_verl.data.location import SHIPPED_MATHDIAL, data_dir
from pearl_verl.dialogue.episode import STUDENT, TUTOR
from pearl_verl.errors import InputError
from pearl_verl.sft.mathdial_teachers import (
    MATHDIAL_CONVERSATIONS,
    parse_conversation,
    read_human_dialogues,
    sft_rows,
)
from pearl_verl.tutor.tutor_prompts import END_MARKER, TUTOR_INSTRUCTION


def words(text: str) -> int:
    return len(text.split())


def opening(problem, wrong):
    return f"OPENING {problem.question} | {wrong}"


def row(question="Tom has 3 apples and buys 4 more. How many now?", answer="7", conversation=None):
    return {
        "qid": 1, "question": question, "ground_truth": f"3 + 4 = {answer}\n {answer}",
        "student_incorrect_solution": "3 + 4 = 8\n 8",
        "conversation": conversation or ("Teacher: (generic)Hi, talk me through your solution|EOM|"
                                         "Student: I added 3 and 4 and got 8.|EOM|"
                                         "Teacher: (focus)Count again: what is 3 + 4?|EOM|"
                                         "Student: Oh, it is 7.|EOM|"
                                         "Teacher: (generic)Yes, that's it|EOM|Student: Thanks!"),
    }


def write(tmp_path, rows):
    path = tmp_path / "mathdial.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" if isinstance(r, dict) else r for r in rows), encoding="utf-8")
    return path


def test_move_labels_go_and_speakers_become_roles():
    turns = parse_conversation("Teacher: (probing)Why 8?|EOM|Student: Because   I added.|EOM|")
    assert [(t.role, t.text) for t in turns] == [(TUTOR, "Why 8?"), (STUDENT, "Because I added.")]
    with pytest.raises(ValueError, match="names no speaker"):
        parse_conversation("Narrator: once upon a time")


def test_a_dialogue_becomes_the_tutor_view_that_rl_shows_the_policy(tmp_path):
    dialogues, dropped = read_human_dialogues(write(tmp_path, [row()]))
    assert not dropped
    rows, left_out = sft_rows(dialogues, exclude_questions=[], opening=opening, max_tutor_turns=6,
                              max_turn_tokens=48, count_tokens=words, limit=10)
    assert not left_out and len(rows) == 1
    messages = rows[0]["messages"]
    assert messages[0]["role"] == "system" and messages[0]["content"].startswith(TUTOR_INSTRUCTION)
    assert messages[1] == {"role": "user", "content": "OPENING Tom has 3 apples and buys 4 more. How many now? | "
                                                      "3 + 4 = 8\n 8"}
    assert [m["role"] for m in messages[2:]] == ["assistant", "user", "assistant", "user", "assistant"]
    assert messages[2]["content"] == "Hi, talk me through your solution"  # no "(generic)"
    # the student said 7 before the last teacher turn: the tutor learns to close the session there
    assert messages[-1]["content"] == f"Yes, that's it {END_MARKER}"
    assert rows[0]["end_reason"] == "tutor_ended" and rows[0]["tutor_turns"] == 3


def test_the_runs_own_problems_long_turns_and_turns_past_the_limit_are_left_out(tmp_path):
    long_turn = "Teacher: " + "word " * 60 + "|EOM|Student: ok"
    dialogues, _ = read_human_dialogues(write(tmp_path, [
        row(question="A problem the run evaluates on?"),
        row(question="Another problem entirely?", conversation=long_turn),
        row(question="A third problem?"),
    ]))
    rows, left_out = sft_rows(dialogues, exclude_questions=["a  problem the run EVALUATES on?"], opening=opening,
                              max_tutor_turns=2, max_turn_tokens=48, count_tokens=words, limit=10)
    assert left_out == {"a problem of the run": 1, "a teacher turn over 48 tokens": 1}
    assert [r["problem_id"].endswith("00003") for r in rows] == [True]
    kept = rows[0]["messages"]
    # two teacher turns kept, the student's message after the second dropped; 8 is no right answer: no end marker
    assert [m["role"] for m in kept[1:]] == ["user", "assistant", "user", "assistant"]
    assert END_MARKER not in kept[-1]["content"] and rows[0]["end_reason"] == "max_turns"


def test_bad_rows_are_counted_and_a_file_of_none_is_refused(tmp_path):
    dialogues, dropped = read_human_dialogues(write(tmp_path, ["not json\n", row(), {**row(), "conversation": 3}]))
    assert len(dialogues) == 1 and dropped == {"malformed": 2}
    with pytest.raises(InputError, match="no usable MathDial conversation"):
        read_human_dialogues(write(tmp_path, ["{}\n"]))


def test_the_shipped_conversations_give_a_cold_start_apart_from_train_locals_problems():
    from pearl_verl.data.sources import load_source

    run_questions = [item.problem.question for item in load_source(SHIPPED_MATHDIAL, "mathdial")[0]]
    dialogues, _ = read_human_dialogues(data_dir() / MATHDIAL_CONVERSATIONS)
    rows, left_out = sft_rows(dialogues, exclude_questions=run_questions, opening=opening, max_tutor_turns=6,
                              max_turn_tokens=48, count_tokens=words, limit=96)
    assert len(rows) == 96
    # the file starts with train-local's 64 problems, and MathDial tutors a problem more than once
    assert left_out["a problem of the run"] >= 64
    asked = {" ".join(r["messages"][0]["content"].split()) for r in rows}
    assert not any(" ".join(q.split()) in text for q in run_questions for text in asked)
