"""The controllable simulator with the offline backend: contract, determinism, state, and invariants."""

import asyncio

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pearl_verl.dialogue.episode_runner import EpisodeLimits, policy_step, run_episode
from pearl_verl.dialogue.student_contract import (
    ATTEMPT_OUTCOMES,
    CognitiveProfile,
    StudentCondition,
    StudentSession,
    StudentSimulator,
)
from pearl_verl.student.mastery import violations
from pearl_verl.student.simulator import PearlStudentSimulator
from pearl_verl.student.student_config import StudentConfig
from pearl_verl.student.taxonomy import BEHAVIOURS
from pearl_verl.tutor.scripted import ScriptedLeakingTutor, ScriptedSocraticTutor

MID = CognitiveProfile(2, 2, 2, 2, 2)


DEFAULT_LIMITS = EpisodeLimits()


def _episode(simulator, problem, condition, seed=0, tutor=None, limits=DEFAULT_LIMITS):
    async def go():
        opening = simulator.opening(problem, condition)
        session = await simulator.start(problem, condition, seed, opening)
        return await run_episode(
            problem, condition, session, opening, policy_step(tutor or ScriptedSocraticTutor(), problem), limits
        )

    return asyncio.run(go())


def test_implements_the_protocols(gsm8k_items):
    simulator = PearlStudentSimulator(StudentConfig())
    problem = gsm8k_items[0].problem
    session = asyncio.run(
        simulator.start(problem, StudentCondition(), 0, simulator.opening(problem, StudentCondition()))
    )
    assert isinstance(simulator, StudentSimulator) and isinstance(session, StudentSession)
    assert len(session.trace) == 1 and session.trace[0].turn == 0 and session.trace[0].llm_calls == 0


def test_same_seed_same_dialogue_and_group_members_share_the_initial_state(gsm8k_items):
    problem = gsm8k_items[3].problem
    condition = StudentCondition(MID, seed=11)
    a = _episode(PearlStudentSimulator(StudentConfig()), problem, condition, seed=5)
    b = _episode(PearlStudentSimulator(StudentConfig()), problem, condition, seed=5)
    assert a.to_dict() == b.to_dict()
    members = [_episode(PearlStudentSimulator(StudentConfig()), problem, condition, seed=s) for s in range(6)]
    assert len({str(m.student_trace[0].mastery) for m in members}) == 1  # m^0 fixed by condition.seed
    assert len({m.turns[0].text for m in members}) == 1  # the opening is the dataset prompt
    assert len({str([t.text for t in m.turns]) for m in members}) > 1  # members' own randomness differs
    other = _episode(PearlStudentSimulator(StudentConfig()), problem, StudentCondition(MID, seed=12))
    assert other.student_trace[0].mastery != a.student_trace[0].mastery


def test_trace_exposes_state_and_solving(gsm8k_items):
    simulator = PearlStudentSimulator(StudentConfig())
    for item in gsm8k_items[:20]:
        episode = _episode(simulator, item.problem, StudentCondition(CognitiveProfile(3, 3, 3, 3, 3), seed=1))
        trace = episode.student_trace
        assert len(trace) == sum(t.role == "student" for t in episode.turns) and [s.turn for s in trace] == list(
            range(len(trace))
        )
        assert all(s.attempt in ATTEMPT_OUTCOMES and set(s.intent) <= set(BEHAVIOURS) for s in trace)
        assert all(set(s.mastery) == set(trace[0].mastery) for s in trace)
        if episode.end_reason == "tutor_ended":  # the scripted tutor ends when the student states the answer
            assert trace[-1].solved and trace[-1].attempt == "correct"
        solved_at = [s.solved for s in trace]
        assert solved_at == sorted(solved_at)  # once solved, stays solved


def test_leaked_answer_is_taken_up_and_mastery_grows(gsm8k_items):
    problem = gsm8k_items[0].problem
    episode = _episode(
        PearlStudentSimulator(StudentConfig()),
        problem,
        StudentCondition(CognitiveProfile(1, 1, 1, 1, 3), seed=2),
        tutor=ScriptedLeakingTutor(),
    )
    first_reply = episode.student_trace[1]
    assert first_reply.attempt == "correct" and "feedback_uptake" in first_reply.intent and first_reply.solved
    assert problem.answer in episode.turns[2].text
    assert sum(first_reply.mastery.values()) > sum(
        episode.student_trace[0].mastery.values()
    )  # the solution was made available


def test_misconception_shapes_opening_and_early_attempts(gsm8k_items):
    problem = gsm8k_items[0].problem  # answer 18
    condition = StudentCondition(
        CognitiveProfile(1, 3, 1, 2, 3), seed=3, misconception="16 - 3 - 4 = 9 eggs, 9 + 2 = 11 dollars."
    )
    simulator = PearlStudentSimulator(StudentConfig())
    opening = simulator.opening(problem, condition)
    assert "9 + 2 = 11" in opening
    session = asyncio.run(simulator.start(problem, condition, 0, opening))
    assert session.trace[0].attempt == "incorrect" and session.trace[0].intent == ("misconception",)
    turn = asyncio.run(
        session.respond("Now put it all together: She makes 9 * 2 = ? every day. What final answer do you get?")
    )
    if turn.state.attempt == "incorrect":
        assert "11" in turn.text and "misconception" in turn.state.intent


def test_frustrated_student_leaves_and_cannot_be_driven_further(gsm8k_items):
    simulator = PearlStudentSimulator(StudentConfig())
    problem = gsm8k_items[1].problem
    low = CognitiveProfile(1, 1, 1, 1, 1)
    left = None
    for seed in range(40):
        episode = _episode(simulator, problem, StudentCondition(low, seed=seed), seed=seed)
        if episode.end_reason == "student_left":
            left = episode
            break
    assert left is not None, "no low-ability student ever left"
    assert left.student_trace[-1].concluded and not left.student_trace[-1].solved
    assert "frustration" in left.student_trace[-1].intent
    no_leaving = PearlStudentSimulator(StudentConfig(allow_leaving=False))
    assert all(
        _episode(no_leaving, problem, StudentCondition(low, seed=s), seed=s).end_reason != "student_left"
        for s in range(20)
    )

    async def until_left():
        session = await simulator.start(problem, StudentCondition(low, seed=left.condition.seed), 0, "hi")
        while not session.trace[-1].concluded:
            await session.respond("Let's check that together. How did you get 7? Try again.")
        return session

    ended = asyncio.run(until_left())
    with pytest.raises(ValueError, match="after the student ended"):
        asyncio.run(ended.respond("hello?"))


def test_student_concludes_after_solving_when_the_tutor_confirms(gsm8k_items):
    problem = gsm8k_items[0].problem
    simulator = PearlStudentSimulator(StudentConfig())

    async def go():
        session = await simulator.start(problem, StudentCondition(MID, seed=0), 0, "hi")
        told = await session.respond(f"The answer is {problem.answer}, because 9 * 2 = 18. Do you see why?")
        done = await session.respond("Exactly, well done.")
        return told, done

    for _ in range(3):
        told, done = asyncio.run(go())
        if told.state.solved:
            assert done.state.concluded and done.state.solved
            return
    pytest.fail("student never took up a leaked answer")


def test_explicit_mastery_controls_the_initial_state(gsm8k_items):
    problem = gsm8k_items[0].problem
    simulator = PearlStudentSimulator(StudentConfig())
    session = asyncio.run(simulator.start(problem, StudentCondition(MID, mastery={"subtraction": 0.05}), 0, "hi"))
    m0 = session.trace[0].mastery
    assert m0["subtraction"] == 0.05 and all(m0[v] <= 0.05 for v in session.graph.successors("subtraction"))
    with pytest.raises(ValueError, match="breaks the prerequisite order"):
        asyncio.run(
            simulator.start(problem, StudentCondition(MID, mastery={"subtraction": 0.1, "money": 0.9}), 0, "hi")
        )


FRAGMENTS = [
    "Good thinking.",
    "Let's check that together. How did you get 12?",
    "What is 3 * 4?",
    "Yes, that's right!",
    "Try multiplying.",
    "Subtract what she eats.",
    "What do you know so far?",
    "Look again at the percent.",
    "The answer is 42.",
    "Remember: total means add.",
    "Divide it into equal parts.",
    "Hmm.",
]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    problem_index=st.integers(0, 249),
    profile=st.lists(st.integers(1, 3), min_size=5, max_size=5),
    seed=st.integers(0, 10**6),
    messages=st.lists(st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=3), max_size=10),
)
def test_invariant_and_monotone_mastery_over_random_dialogues(gsm8k_items, problem_index, profile, seed, messages):
    problem = gsm8k_items[problem_index].problem
    simulator = PearlStudentSimulator(StudentConfig())

    async def go():
        session = await simulator.start(problem, StudentCondition(CognitiveProfile(*profile), seed=seed), seed, "hi")
        steps = [step.text.replace(step.result or "@@", "?") for step in session.decomposition.steps]
        for parts in messages:
            if session.trace[-1].concluded:
                break
            await session.respond(" ".join(parts + steps[: seed % (len(steps) + 1)]))
        return session

    session = asyncio.run(go())
    for before, after in zip(session.trace, session.trace[1:]):
        assert not violations(session.graph, after.mastery)
        assert all(after.mastery[u] >= before.mastery[u] for u in before.mastery)
    assert not violations(session.graph, session.trace[0].mastery)
