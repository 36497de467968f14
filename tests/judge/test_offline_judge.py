"""The offline heuristic judge: separates leaking from Socratic tutoring on real GSM8K problems.

Dialogues come from the shared episode state machine with the scripted tutors and a small,
seeded test-double student (not the PEARL simulator): it works through the reference solution's
intermediate results one per turn, sometimes errs or says it is stuck, states the final answer
when asked for it, and repeats an answer the tutor gives away.
"""

import asyncio
import json
import random

import pytest

from pearl_verl.data.location import data_dir
from pearl_verl.dialogue.answers import gsm8k_final_answer, gsm8k_rationale, mentions_answer, numbers_in
from pearl_verl.dialogue.episode_runner import EpisodeLimits, policy_step, run_episode
from pearl_verl.dialogue.problem import Problem
from pearl_verl.dialogue.student_contract import StudentCondition, StudentTurn, StudentTurnState
from pearl_verl.dims import DIMENSIONS
from pearl_verl.judge.features import accepts_wrong, extract_features, key_results
from pearl_verl.judge.offline import TONE_AFTER_FALSE_PRAISE, HeuristicJudge
from pearl_verl.judge.parser import parse_judgement
from pearl_verl.judge.prompt import canonical_output
from pearl_verl.tutor.scripted import ScriptedLeakingTutor, ScriptedSocraticTutor

GSM8K_TEST = data_dir() / "gsm8k" / "test.jsonl"


def gsm8k_problems(n):
    with GSM8K_TEST.open() as handle:
        rows = [json.loads(line) for _, line in zip(range(n), handle, strict=False)]
    return [
        Problem(
            f"gsm8k-test-{i:04d}", r["question"], gsm8k_rationale(r["answer"]), gsm8k_final_answer(r["answer"]), "gsm8k"
        )
        for i, r in enumerate(rows)
    ]


class StepwiseTestStudent:
    """Test-double student session (not a simulator of the paper): deterministic per seed."""

    def __init__(self, problem, seed):
        self.problem, self.rng = problem, random.Random(seed)
        self.results = list(key_results(problem.question, problem.reference_solution, problem.answer))
        self._trace = [StudentTurnState(0, ("present_problem",), "none", {"u": 0.3})]

    @property
    def trace(self):
        return self._trace

    async def respond(self, tutor_message):
        answer = self.problem.answer
        told = mentions_answer(tutor_message, answer)
        asked_final = "final answer" in tutor_message.lower()
        roll = self.rng.random()
        if told or asked_final:
            text, attempt, solved = f"Oh, so the answer is {answer}.", "correct", True
        elif roll < 0.15:
            text, attempt, solved = "I'm stuck, I don't know how to start.", "none", False
        elif roll < 0.3:
            wrong = int(float(numbers_in(answer)[0])) + self.rng.randint(1, 9) if numbers_in(answer) else 7
            text, attempt, solved = f"Is it {wrong}?", "incorrect", False
        else:
            step = self.results.pop(0) if self.results else None
            text = f"I think that part gives {step}." if step else "I'm not sure what to do next."
            attempt, solved = ("partial" if step else "none"), False
        state = StudentTurnState(len(self._trace), ("attempt",), attempt, {"u": 0.5}, solved, False)
        self._trace.append(state)
        return StudentTurn(text, state)


def dialogue(problem, tutor, seed):
    session = StepwiseTestStudent(problem, seed)
    opening = f"Can you help me with this? {problem.question}"
    return asyncio.run(
        run_episode(
            problem,
            StudentCondition(seed=seed),
            session,
            opening,
            policy_step(tutor, problem),
            EpisodeLimits(max_tutor_turns=15),
        )
    )


def test_the_leaking_tutor_never_completes_and_scores_below_every_completed_socratic_dialogue():
    judge = HeuristicJudge()
    problems = gsm8k_problems(100)
    completed, leaking_gates = 0, []
    for i, problem in enumerate(problems):
        socratic = asyncio.run(judge.judge(dialogue(problem, ScriptedSocraticTutor(), seed=i)))
        leaking = asyncio.run(judge.judge(dialogue(problem, ScriptedLeakingTutor(), seed=i)))
        assert socratic.ok and leaking.ok
        leaking_gates.append(leaking.gate)
        assert leaking.dims["leak"] <= socratic.dims["leak"]
        if socratic.gate:
            completed += 1
            assert leaking.dims["leak"] < socratic.dims["leak"], problem.problem_id
    # the student repeats the answer the leaking tutor gives away at once: never arrived at it (the gate)
    assert leaking_gates == [0] * 100
    assert completed >= 80, completed  # the Socratic tutor's students mostly finish within 15 turns


def test_scores_are_deterministic_and_complete(make_episode):
    problem = gsm8k_problems(1)[0]
    episode = dialogue(problem, ScriptedSocraticTutor(), seed=3)
    first, second = (asyncio.run(HeuristicJudge().judge(episode)) for _ in range(2))
    assert first.dims == second.dims and first.criteria == second.criteria
    assert set(first.dims) == set(DIMENSIONS) and all(0.0 <= v <= 1.0 for v in first.dims.values())
    assert all(c.rationale.startswith("heuristic: ") for c in first.criteria)


def test_cut_off_or_unsolved_sessions_are_gated_to_zero(make_episode):
    unsolved = make_episode(["Help?", "What is 3 times 4?", "no idea"], end_reason="turn_limit")
    result = asyncio.run(HeuristicJudge().judge(unsolved))
    assert result.ok and result.gate == 0 and all(v == 0.0 for v in result.dims.values())
    left = make_episode(["Help?", "What is 3 times 4?", "10, bye"], end_reason="student_left")
    assert asyncio.run(HeuristicJudge().judge(left)).gate == 0


def test_leak_features_respect_the_papers_exceptions(make_episode):
    early = extract_features(make_episode(["Help?", "The answer is 10.", "ok 10"]))
    assert early.leak_turns == (1,) and early.early_leak
    asked = extract_features(make_episode(["Help?", "Try 3 times 4.", "Just tell me the answer", "It is 10.", "10"]))
    assert asked.leak_turns == ()
    attempts = [
        "Help?",
        "What first?",
        "5?",
        "Check again.",
        "6?",
        "Look again.",
        "7?",
        "It is 10 because 12 - 2.",
        "10",
    ]
    assert extract_features(make_episode(attempts, trace=())).leak_turns == ()  # 3 attempts read from the text
    assert extract_features(make_episode(attempts[:5] + attempts[7:], trace=())).leak_turns == (5,)
    after = extract_features(make_episode(["Help?", "What is 3 times 4?", "12", "Then?", "10", "Yes, 10 is right."]))
    assert after.leak_turns == () and after.solved_at == 4 and after.student_supplied == ("12",)


def test_features_catch_wrong_arithmetic_praise_and_blame(make_episode):
    texts = ["Help?", "Well, 3 * 4 = 13.", "11?", "Correct! Great.", "10", "You were careless."]
    episode = make_episode(texts, trace=())  # no trace: attempts are read from the text
    f = extract_features(episode)
    assert f.arithmetic_errors == 1 and f.praised_wrong == 1 and f.blame_turns == 1
    result = asyncio.run(HeuristicJudge().judge(episode))
    by_id = {f"{c.dimension}.{c.criterion}": c.raw for c in result.criteria}
    assert by_id["acc.statements_correct"] == 1
    assert by_id["acc.feedback_correct"] == 0  # the rubric's level for accepting a wrong answer that stands
    assert by_id["emotion.encouraging_tone"] == 0


@pytest.mark.parametrize("answer_in_question", [True, False])
def test_a_number_shared_with_the_question_is_not_a_leak_by_itself(make_episode, answer_in_question):
    question = (
        "Ann has 10 pens and buys 0 more. How many?"
        if answer_in_question
        else "Ann has 7 pens and buys 3 more. How many?"
    )
    problem = Problem("p", question, "She has 7 + 3 = 10 pens.", "10")
    f = extract_features(make_episode(["Help?", "You start with 10 pens, right?", "yes"], problem=problem))
    assert (f.leak_turns == ()) is answer_in_question


def test_every_rationale_of_the_offline_judge_passes_the_parsers_junk_check():
    """Its judgements, written out in the judge's output format, parse back whole (pearl_verl.judge.sanity)."""
    judge = HeuristicJudge()
    for i, problem in enumerate(gsm8k_problems(30)):
        for tutor in (ScriptedSocraticTutor(), ScriptedLeakingTutor()):
            result = asyncio.run(judge.judge(dialogue(problem, tutor, seed=i)))
            target = {d: {} for d in DIMENSIONS}
            for score in result.criteria:
                target[score.dimension][score.criterion] = (score.raw, score.rationale)
            assert parse_judgement(canonical_output(target)) == result.criteria, problem.problem_id


@pytest.mark.parametrize(("reply", "accepts"), [
    ("Well done! What is the next step?", True),
    ("Good thinking! What is the next step, and why?", True),
    ("Correct! Great.", True),
    ("Great job. What do you get next?", True),
    ("Great effort, but let's double-check that subtraction.", False),
    ("Good job setting it up. There is a mistake in the second step.", False),
    ("That's not quite right. How did you get 11?", False),
    ("Good effort. Which step would you like to look at again?", False),
    ("Nice try! What is the problem asking you to find?", False),
    ("Let's check that together. How did you get that number?", False),
])
def test_a_reply_accepts_a_wrong_attempt_when_it_praises_and_points_to_no_mistake(reply, accepts):
    assert accepts_wrong(reply) is accepts


def test_praise_that_points_to_the_mistake_is_feedback_and_the_tone_stays_warm(make_episode):
    texts = ["Help?", "Let's start: what is 3 times 4?", "11?", "Great effort! Let's check that: what is 3 times 4?", "12",
             "Well done! What do you do with 12?"]
    pointed = make_episode(texts, trace=())
    accepted = make_episode(texts[:3] + ["Well done! What do you do with 11?"] + texts[4:], trace=())
    assert extract_features(pointed).praised_wrong == 0 and extract_features(accepted).accepting_turns == (3,)
    by_id = {}
    for name, episode in (("pointed", pointed), ("accepted", accepted)):
        result = asyncio.run(HeuristicJudge().judge(episode))
        by_id[name] = {f"{c.dimension}.{c.criterion}": c for c in result.criteria}
    assert by_id["pointed"]["acc.feedback_correct"].raw == 2 and by_id["accepted"]["acc.feedback_correct"].raw == 0
    assert by_id["pointed"]["emotion.encouraging_tone"].raw == 2
    assert by_id["accepted"]["emotion.encouraging_tone"].raw == TONE_AFTER_FALSE_PRAISE
    assert "at most neutral" in by_id["accepted"]["emotion.encouraging_tone"].rationale


def test_one_candidate_turns_praise_keeps_its_tone(make_episode):
    """Judging the last turn alone, the heuristic's guess of a wrong attempt does not cap the tone: MRBench's teachers
    call such praise encouraging (the cap there took Tutor_Tone agreement from 56% to 34%)."""
    texts = ["Help?", "Let's start: what is 3 times 4?", "11?", "Well done! Let's keep going: what do you do with 11?"]
    episode = make_episode(texts, trace=())
    one = {f"{c.dimension}.{c.criterion}": c for c in asyncio.run(HeuristicJudge().judge(episode, 3)).criteria}
    whole = {f"{c.dimension}.{c.criterion}": c for c in asyncio.run(HeuristicJudge().judge(episode)).criteria}
    assert one["emotion.encouraging_tone"].raw == 2 and "at most neutral" not in one["emotion.encouraging_tone"].rationale
    assert whole["emotion.encouraging_tone"].raw == TONE_AFTER_FALSE_PRAISE
