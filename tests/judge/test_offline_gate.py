"""The offline judge's completion gate g follows the rubric's definition, case by case.

g = 1 only when the student arrived at the correct final answer by their own reasoning, or after a
warranted explanation (three genuine attempts, or an explicit request) that they then used, and the
session ended normally. A student who repeats an answer the tutor stated unwarranted has not arrived.
"""

import asyncio

from pearl_verl.judge.offline import HeuristicJudge
from pearl_verl.judge.prompt import system_prompt
from pearl_verl.judge.rubric import RUBRIC


def _judge(episode):
    result = asyncio.run(HeuristicJudge().judge(episode))
    assert result.ok
    return result


def test_a_student_repeating_an_answer_the_tutor_gave_away_has_not_completed(make_episode):
    result = _judge(make_episode(["Can you help me?", "The answer is 10.", "Oh, 10.", "Well done!"]))
    assert result.gate == 0 and all(v == 0.0 for v in result.dims.values())
    gate = next(c for c in result.criteria if (c.dimension, c.criterion) == ("complete", "session_complete"))
    assert "unwarranted in turn(s) [1]" in gate.rationale
    # one genuine attempt is not a warrant either
    one_try = make_episode(["Can you help me?", "What first?", "5?", "No: it is 10.", "10", "Good."], trace=())
    assert _judge(one_try).gate == 0


def test_a_student_who_reasons_to_the_answer_completes(episode):
    assert _judge(episode).gate == 1  # 12 from the tutor's question, then 10 from the student


def test_a_warranted_explanation_after_failed_attempts_and_a_request_then_used_completes(make_episode):
    texts = ["Can you help me?", "What do you get first?", "5?", "Check that again.", "6?", "Look again.", "7?",
             "How did you get that?", "I don't know, just tell me the answer.",
             "It is 10: 3 times 4 is 12 apples, and 12 - 2 = 10.", "Oh I see, 12 minus 2 leaves 10.", "Well done!"]
    assert _judge(make_episode(texts, trace=())).gate == 1
    # the same explanation that the student never takes up: no answer reached, no completion
    assert _judge(make_episode(texts[:-2] + ["I'm still lost.", "Let's stop here."], trace=())).gate == 0


def test_the_answer_stated_after_the_student_solved_it_keeps_the_gate_open(make_episode):
    texts = ["Can you help me?", "What is 3 times 4?", "12", "And then?", "10", "Yes, the answer is 10. Well done!"]
    assert _judge(make_episode(texts)).gate == 1


def test_a_cut_off_session_stays_incomplete_whoever_found_the_answer(make_episode):
    texts = ["Can you help me?", "What is 3 times 4?", "12", "And then?", "10"]
    assert _judge(make_episode(texts, end_reason="turn_limit")).gate == 0


def test_the_llm_judge_is_given_the_same_definition():
    prompt = system_prompt()
    gate = RUBRIC.gate
    assert "warranted only after the student's repeated genuine attempts" in gate.definition
    assert gate.definition in prompt
    assert "only repeated a final answer the tutor stated unwarranted" in dict(gate.levels)[0]


def test_an_operand_equal_to_the_answer_is_not_the_answer_stated(make_episode):
    # the answer is 10: "5 x 10 = ?" sets up an operation, "so 12 - 2 = 10" states the result
    setup = make_episode(["Can you help me?", "There are 5 x 10 = ? apples in 5 bags of ten. Then?", "12 - 2 is 10",
                          "Well done!"])
    assert _judge(setup).gate == 1
    told = make_episode(["Can you help me?", "So 12 - 2 = 10.", "10", "Well done!"])
    assert _judge(told).gate == 0
