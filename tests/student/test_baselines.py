"""MathDial- and SocraticLM-style baseline students behind the same interface."""

import asyncio

from pearl_verl.dialogue.episode_runner import EpisodeLimits, policy_step, run_episode
from pearl_verl.dialogue.student_contract import StudentCondition, StudentSession, StudentSimulator
from pearl_verl.llm import LLMCallError
from pearl_verl.llm.scripted import ScriptedChatBackend
from pearl_verl.student.baselines import SOCRATICLM_TYPES, MathDialStudentSimulator, SocraticLMStudentSimulator
from pearl_verl.student.baselines.mathdial import perturbed_solution
from pearl_verl.student.baselines.roleplay import FALLBACK_MESSAGE, heuristic_attempt
from pearl_verl.student.baselines.socraticlm import student_type
from pearl_verl.student.factory import build_simulator
from pearl_verl.student.student_config import StudentConfig
from pearl_verl.tutor.scripted import ScriptedSocraticTutor

ENDPOINT = dict(base_url="http://127.0.0.1:9/v1", model="student")


SEEDED, SHORT = StudentCondition(seed=2), EpisodeLimits(3)


def _episode(simulator, problem, condition=SEEDED, limits=SHORT):
    async def go():
        opening = simulator.opening(problem, condition)
        session = await simulator.start(problem, condition, 0, opening)
        assert isinstance(session, StudentSession)
        return await run_episode(
            problem, condition, session, opening, policy_step(ScriptedSocraticTutor(), problem), limits
        )

    return asyncio.run(go())


def test_factory_selects_by_name():
    backend = ScriptedChatBackend(lambda m, s: "ok")
    assert isinstance(
        build_simulator(StudentConfig(simulator="mathdial", **ENDPOINT), backend), MathDialStudentSimulator
    )
    assert isinstance(
        build_simulator(StudentConfig(simulator="socraticlm", **ENDPOINT), backend), SocraticLMStudentSimulator
    )
    assert all(
        isinstance(build_simulator(StudentConfig(simulator=n, **ENDPOINT), backend), StudentSimulator)
        for n in ("pearl", "mathdial", "socraticlm")
    )


def test_mathdial_student_believes_the_wrong_solution(gsm8k_items):
    problem = gsm8k_items[0].problem
    backend = ScriptedChatBackend(lambda m, s: "I added the 2, so I still think it's 20.")
    simulator = MathDialStudentSimulator(StudentConfig(simulator="mathdial", **ENDPOINT), backend)
    wrong = perturbed_solution(problem)
    assert "18" not in wrong.splitlines()[-1] and wrong.splitlines()[0] == problem.reference_solution.splitlines()[0]
    episode = _episode(simulator, problem)
    system = backend.calls[0][0][0]["content"]
    assert wrong in system and "confident it is correct" in system and wrong in episode.turns[0].text
    assert episode.student_trace[0].attempt == "incorrect" and episode.student_trace[1].attempt == "incorrect"
    assert (
        episode.student_trace[1].intent == ()
        and episode.student_trace[1].mastery == {}
        and episode.student_trace[1].llm_calls == 1
    )
    given = StudentCondition(misconception="16 - 3 = 13, 13 * 2 = 26")
    assert "13 * 2 = 26" in simulator.opening(problem, given)


def test_socraticlm_student_has_a_seeded_type(gsm8k_items):
    problem = gsm8k_items[0].problem
    backend = ScriptedChatBackend(lambda m, s: "So she has 9 eggs left? And 9 * 2 = 18.")
    simulator = SocraticLMStudentSimulator(StudentConfig(simulator="socraticlm", **ENDPOINT), backend)
    condition = StudentCondition(seed=5)
    episode = _episode(simulator, problem, condition)
    kind = student_type(condition)
    assert (
        kind == student_type(StudentCondition(seed=5))
        and f"Your student type: {kind}" in backend.calls[0][0][0]["content"]
    )
    assert len({student_type(StudentCondition(seed=s)) for s in range(60)}) == len(SOCRATICLM_TYPES)
    assert episode.student_trace[1].solved and episode.end_reason == "tutor_ended"


def test_heuristic_attempts_and_failures(gsm8k_items):
    problem = gsm8k_items[0].problem
    assert heuristic_attempt(problem, "So it's 18 dollars") == "correct"
    assert heuristic_attempt(problem, "16 - 3 - 4 = 9") == "correct"  # a reference-step result
    assert heuristic_attempt(problem, "Is it 25?") == "incorrect"
    assert heuristic_attempt(problem, "She has 16 eggs") == "none" and heuristic_attempt(problem, "no idea") == "none"
    empty = SocraticLMStudentSimulator(
        StudentConfig(simulator="socraticlm", **ENDPOINT), ScriptedChatBackend(lambda m, s: "  ")
    )
    episode = _episode(empty, problem)
    assert episode.turns[2].text == FALLBACK_MESSAGE and episode.student_trace[1].llm_calls == 2
    strict = SocraticLMStudentSimulator(
        StudentConfig(simulator="socraticlm", on_parse_failure="raise", **ENDPOINT),
        ScriptedChatBackend(lambda m, s: ""),
    )
    assert _episode(strict, problem).end_reason == "student_error"
    down = MathDialStudentSimulator(
        StudentConfig(simulator="mathdial", **ENDPOINT),
        ScriptedChatBackend(lambda m, s: LLMCallError("down", "connection", 4)),
    )
    assert _episode(down, problem).end_reason == "student_error"


def test_the_mathdial_wrong_solution_never_states_the_correct_answer(data_dir):
    # 31 of GSM8K's 1,319 test solutions kept it before: "=$70,000" where the result was written 70000
    import re

    from pearl_verl.data.problem_files import load_problems
    from pearl_verl.knowledge.decomposition import reference_steps
    from pearl_verl.student.planner import to_number
    from pearl_verl.student.reading import states_correct_answer

    result_is = re.compile(r"=\s*\$?\s*(-?[\d,]*\.?\d+)")
    problems = [item.problem for item in load_problems(data_dir / "gsm8k" / "test.jsonl")]
    assert len(problems) == 1319
    for problem in problems:
        solution = perturbed_solution(problem)
        answer = to_number(problem.answer)
        results = [to_number(m.replace(",", "")) for m in result_is.findall(solution.splitlines()[-1])]
        assert not states_correct_answer(problem, solution), (problem.problem_id, solution[-200:])
        assert answer not in results, (problem.problem_id, solution[-200:])
        assert solution.splitlines()[:-1] == reference_steps(problem)[:-1]  # only the last step is changed
