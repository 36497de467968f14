"""The shared episode state machine: turn-taking, every stopping rule, failures as flagged ends."""

import asyncio

import pytest

from pearl_verl.dialogue.episode import STUDENT, TUTOR
from pearl_verl.dialogue.episode_runner import EpisodeLimits, TutorReply, policy_step, run_episode
from pearl_verl.dialogue.problem import Problem, solution_steps
from pearl_verl.dialogue.student_contract import StudentCondition, StudentTurn, StudentTurnState
from pearl_verl.llm import LLMCallError
from pearl_verl.tutor.scripted import ScriptedLeakingTutor, ScriptedSocraticTutor, hide_results
from pearl_verl.tutor.tutor_prompts import END_MARKER

PROBLEM = Problem(
    "gsm8k-x", "Tom has 3 boxes of 4 apples and eats 2. How many are left?",
    "Tom has 3 * 4 = 12 apples.\nAfter eating 2 he has 12 - 2 = 10 apples.", "10", "gsm8k",
)


class FakeSession:
    """Test double for a student: replies from a list of (text, concluded, solved, error)."""

    def __init__(self, replies):
        self.replies = list(replies)
        self._trace = [StudentTurnState(0, ("no_attempt",), "none", {})]
        self.heard = []

    @property
    def trace(self):
        return self._trace

    async def respond(self, tutor_message):
        self.heard.append(tutor_message)
        text, concluded, solved, error = self.replies.pop(0)
        if error:
            raise LLMCallError("student endpoint down", "connection", 4)
        state = StudentTurnState(len(self._trace), ("attempt",), "correct" if solved else "none", {}, solved, concluded)
        self._trace.append(state)
        return StudentTurn(text, state)


def _run(session, step, limits=EpisodeLimits(), observe=None):
    return asyncio.run(run_episode(PROBLEM, StudentCondition(), session, "Can you help me?", step, limits, observe))


def _tutor(*texts, error_at=None):
    queue = list(texts)

    async def step(turns):
        if error_at is not None and sum(t.role == TUTOR for t in turns) == error_at:
            raise LLMCallError("tutor endpoint down", "timeout", 3)
        return TutorReply(queue.pop(0)) if isinstance(queue[0], str) else queue.pop(0)

    return step


def test_end_marker_ends_and_is_stripped():
    session = FakeSession([("12?", False, False, None)])
    episode = _run(session, _tutor("What is 3 times 4?", f"Great work. {END_MARKER} trailing"))
    assert episode.end_reason == "tutor_ended" and episode.ended_normally
    assert [t.role for t in episode.turns] == [STUDENT, TUTOR, STUDENT, TUTOR]
    assert episode.turns[-1].text == "Great work." and episode.tutor_turns == 2
    assert session.heard == ["What is 3 times 4?"]
    assert len(episode.student_trace) == 2


def test_student_concluding_with_and_without_solving():
    solved = _run(FakeSession([("It's 10! Thanks, bye", True, True, None)]), _tutor("Try it."))
    assert solved.end_reason == "student_concluded" and solved.ended_normally
    left = _run(FakeSession([("I give up.", True, False, None)]), _tutor("Try it."))
    assert left.end_reason == "student_left" and not left.ended_normally


def test_turn_limit_cuts_off_after_the_students_reply():
    session = FakeSession([("hmm", False, False, None)] * 3)
    episode = _run(session, _tutor("q1", "q2", "q3"), EpisodeLimits(max_tutor_turns=3))
    assert episode.end_reason == "turn_limit" and not episode.ended_normally
    assert episode.tutor_turns == 3 and episode.turns[-1].role == STUDENT


def test_token_budget_from_tutor_or_student_side():
    by_tutor = _run(FakeSession([]), _tutor(TutorReply("cut off mid-sen", budget_exhausted=True)))
    assert by_tutor.end_reason == "token_budget" and by_tutor.tutor_turns == 1

    async def spent(turn):
        return True

    by_student = _run(FakeSession([("10, done", True, True, None)]), _tutor("q"), observe=spent)
    assert by_student.end_reason == "token_budget" and not by_student.ended_normally


def test_backend_failures_end_flagged_instead_of_raising():
    student_down = _run(FakeSession([(None, False, False, "down")]), _tutor("q"))
    assert student_down.end_reason == "student_error" and not student_down.ended_normally
    tutor_down = _run(FakeSession([("hmm", False, False, None)]), _tutor("q1", error_at=1))
    assert tutor_down.end_reason == "tutor_error" and tutor_down.tutor_turns == 1


def test_scripted_socratic_tutor_hides_results_and_ends_on_the_answer():
    assert solution_steps(PROBLEM.reference_solution)[1] == "After eating 2 he has 12 - 2 = 10 apples."
    assert hide_results("After eating 2 he has 12 - 2 = 10 apples.") == "After eating 2 he has 12 - 2 = ? apples."
    session = FakeSession([("I don't know", False, False, None), ("12 apples?", False, False, None),
                           ("so 10 left", False, False, None), ("ok", True, True, None)])
    episode = _run(session, policy_step(ScriptedSocraticTutor(), PROBLEM))
    tutor_texts = [t.text for t in episode.turns if t.role == TUTOR]
    assert episode.end_reason == "tutor_ended"
    assert "10" not in " ".join(tutor_texts[:-1])  # never revealed before the student said it
    assert "12 = ?" not in tutor_texts[1] and "= ?" in tutor_texts[1]
    assert tutor_texts[2].startswith("Let's check that") or "= ?" in tutor_texts[2]


def test_scripted_leaking_tutor_leaks_at_once():
    episode = _run(FakeSession([("oh ok", False, False, None)]), policy_step(ScriptedLeakingTutor(), PROBLEM))
    first = [t.text for t in episode.turns if t.role == TUTOR][0]
    assert "The answer is 10" in first and episode.end_reason == "tutor_ended"


def test_limits_validation():
    with pytest.raises(ValueError, match="max_tutor_turns=0"):
        EpisodeLimits(max_tutor_turns=0)
