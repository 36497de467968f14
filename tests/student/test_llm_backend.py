"""The LLM backend's roles: call counting, the refine step only on failed checks, strict parsing, failures, HTTP."""

import asyncio
import json
import re

import pytest

from pearl_verl.dialogue.episode_runner import EpisodeLimits, policy_step, run_episode
from pearl_verl.dialogue.student_contract import CognitiveProfile, StudentCondition
from pearl_verl.llm import EndpointConfig, LLMCallError, OpenAIChatClient
from pearl_verl.llm.local_server import LocalChatServer, Reply
from pearl_verl.llm.scripted import ScriptedChatBackend
from pearl_verl.student.factory import build_simulator
from pearl_verl.student.student_config import StudentConfig
from pearl_verl.tutor.scripted import ScriptedSocraticTutor

LLM = dict(backend="llm", base_url="http://127.0.0.1:9/v1", model="student", decomposer="rules")
CONDITION = StudentCondition(CognitiveProfile(2, 2, 2, 2, 2), seed=4)


def role(messages):
    system = messages[0]["content"]
    for name, prefix in (
        ("planner", "You plan the next turn"),
        ("realiser", "You are role-playing"),
        ("refine", "You edit"),
    ):
        if system.startswith(prefix):
            return name
    raise AssertionError(f"unexpected prompt: {system[:60]}")


def consistent_student(messages):
    """Writes what the realiser prompt asks for, so the cheap check passes."""
    system = messages[0]["content"]
    if m := re.search(r"State the final answer (.+?); it must", system):
        return f"Hmm, so the answer is {m.group(1)}. Is that right?"
    if m := re.search(r"commit to the value (\S+)\. Step", system):
        return f"I think it is {m.group(1)}. Is that right?"
    if m := re.search(r"state its result (\S+):", system):
        return f"That gives {m.group(1)}, right? Can you help me check?"
    return "I'm not sure what to do here, can you help?"


def scripted(
    planner=lambda m: '{"behaviours": ["uncertainty", "help_seeking"], "leave": false}',
    realiser=consistent_student,
    refine=lambda m: "I'm not sure, can you help?",
):
    roles = {"planner": planner, "realiser": realiser, "refine": refine}
    return ScriptedChatBackend(lambda messages, sampling: roles[role(messages)](messages))


EIGHT_TURNS = EpisodeLimits(8)


def _episode(simulator, problem, condition=CONDITION, limits=EIGHT_TURNS):
    async def go():
        opening = simulator.opening(problem, condition)
        session = await simulator.start(problem, condition, 1, opening)
        return await run_episode(
            problem, condition, session, opening, policy_step(ScriptedSocraticTutor(), problem), limits
        ), session

    return asyncio.run(go())


def test_calls_per_turn_are_counted_and_at_most_two_when_checks_pass(gsm8k_items):
    backend = scripted()
    simulator = build_simulator(StudentConfig(**LLM), backend)
    episodes = [_episode(simulator, item.problem)[0] for item in gsm8k_items[:10]]
    replies = [s for e in episodes for s in e.student_trace[1:]]
    assert sum(s.llm_calls for s in replies) == len(backend.calls)  # every call is attributed to a turn
    assert all(
        s.llm_calls in (1, 2) for s in replies
    )  # planner + realiser; rule-decided special turns skip the planner
    assert sum(s.llm_calls for s in replies) / len(replies) <= 2.0
    assert not [c for c in backend.calls if role(c[0]) == "refine"]  # the cheap check passed every time
    assert {s.reply_source for s in replies} == {"llm"} and {s.plan_source for s in replies} <= {"llm", "rules"}
    assert "llm" in {s.plan_source for s in replies}
    sampling = backend.calls[0][1]
    assert (sampling.temperature, sampling.top_p, sampling.top_k) == (1.0, 1.0, 50)


def test_refine_runs_only_when_the_check_fails_then_falls_back_to_the_template(gsm8k_items):
    problem = gsm8k_items[0].problem
    leaky = lambda m: f"The answer is {problem.answer}. Can you help?"  # noqa: E731 - contradicts every other intent
    fixed = build_simulator(StudentConfig(**LLM), backend := scripted(realiser=leaky))
    episode, session = _episode(fixed, problem, limits=EpisodeLimits(4))
    refines = [c for c in backend.calls if role(c[0]) == "refine"]
    assert refines and "must not state the correct final answer" in refines[0][0][1]["content"]
    assert session.usage["check_failures"] == len(refines)
    assert sum(s.llm_calls for s in episode.student_trace) == len(backend.calls)
    for text, state in zip([t.text for t in episode.turns[2::2]], episode.student_trace[1:]):
        if not state.solved:  # the leak never reaches the dialogue unless answering was the plan
            assert "The answer is" not in text and state.llm_calls >= 2
    sources = [s.reply_source for s in episode.student_trace[1:]]
    # every refine either passed the check (refined) or ended in the template (fallback), on its own turn
    assert sources.count("refined") + sources.count("fallback") == len(refines)
    assert sources.count("fallback") == session.usage["template_fallbacks"] and "refined" in sources

    stubborn = build_simulator(StudentConfig(**LLM), scripted(realiser=leaky, refine=leaky))
    episode, session = _episode(stubborn, problem, limits=EpisodeLimits(3))
    assert session.usage["template_fallbacks"] >= 1
    sources = [s.reply_source for s in episode.student_trace[1:]]
    assert sources.count("fallback") == session.usage["template_fallbacks"]  # each counted on its turn
    assert all(
        "The answer is" not in t.text for t, s in zip(episode.turns[2::2], episode.student_trace[1:]) if not s.solved
    )

    no_refine = build_simulator(StudentConfig(**LLM, refine=False), backend := scripted(realiser=leaky))
    _, session = _episode(no_refine, problem, limits=EpisodeLimits(3))
    assert not [c for c in backend.calls if role(c[0]) == "refine"] and session.usage["template_fallbacks"] >= 1


def test_planner_replies_are_parsed_strictly_retried_and_fall_back(gsm8k_items):
    problem = gsm8k_items[2].problem
    replies = iter(["Sure! I think uncertainty.", '{"behaviours": ["uncertainty"], "leave": false}'] * 50)
    simulator = build_simulator(StudentConfig(**LLM), backend := scripted(planner=lambda m: next(replies)))
    episode, session = _episode(simulator, problem, limits=EpisodeLimits(2))
    planner_calls = [c for c in backend.calls if role(c[0]) == "planner"]
    assert session.usage["parse_failures/planner"] >= 1 and len(planner_calls) >= 2
    assert "rejected" in planner_calls[1][0][-1]["content"]  # the retry quotes the problem found

    junk = build_simulator(
        StudentConfig(**LLM), scripted(planner=lambda m: '{"behaviours": ["boredom"], "leave": false}')
    )
    episode, session = _episode(junk, problem, limits=EpisodeLimits(3))
    assert session.usage["fallbacks/planner"] >= 1 and episode.end_reason != "student_error"  # rule labels used
    plan_sources = [s.plan_source for s in episode.student_trace[1:]]
    assert plan_sources.count("fallback") == session.usage["fallbacks/planner"] and "llm" not in plan_sources

    strict = build_simulator(StudentConfig(**LLM, on_parse_failure="raise"), scripted(planner=lambda m: "nope"))
    episode, _ = _episode(strict, problem)
    assert episode.end_reason == "student_error" and not episode.ended_normally


def test_llm_labels_are_made_consistent_with_the_drawn_attempt(gsm8k_items):
    everything = '{"behaviours": ["guessing", "misconception", "persistence", "uncertainty"], "leave": false}'
    simulator = build_simulator(StudentConfig(**LLM), scripted(planner=lambda m: everything))
    episode, _ = _episode(simulator, gsm8k_items[5].problem, limits=EpisodeLimits(10))
    for state in episode.student_trace[1:]:
        if state.attempt == "none":
            assert not {"guessing", "persistence", "misconception"} & set(state.intent)
        if "misconception" in state.intent:
            assert state.attempt == "incorrect"


def test_rule_planner_halves_the_calls(gsm8k_items):
    backend = scripted()
    simulator = build_simulator(StudentConfig(**LLM, planner="rules"), backend)
    episode, _ = _episode(simulator, gsm8k_items[0].problem)
    assert all(s.llm_calls == 1 for s in episode.student_trace[1:])
    assert {role(c[0]) for c in backend.calls} == {"realiser"}


def test_endpoint_failure_ends_the_episode_flagged(gsm8k_items):
    down = ScriptedChatBackend(lambda m, s: LLMCallError("student endpoint down", "timeout", 4))
    episode, _ = _episode(build_simulator(StudentConfig(**LLM), down), gsm8k_items[0].problem)
    assert episode.end_reason == "student_error" and len(episode.student_trace) == 1


def test_http_path_against_a_local_server(gsm8k_items):
    problem = gsm8k_items[0].problem

    def respond(request):
        messages = request["messages"]
        if role(messages) == "planner":
            return '{"behaviours": ["uncertainty"], "leave": false}'
        return consistent_student(messages)

    with LocalChatServer(respond, model="student") as server:
        config = StudentConfig(
            backend="llm", base_url=server.base_url, model="student", decomposer="rules", max_retries=0
        )
        episode, _ = _episode(build_simulator(config), problem, limits=EpisodeLimits(3))
        bodies = list(server.requests)
    assert episode.end_reason in ("turn_limit", "tutor_ended")
    assert sum(s.llm_calls for s in episode.student_trace) == len(bodies)
    assert all(body["top_k"] == 50 and body["temperature"] == 1.0 for body in bodies)
    caps = {role(body["messages"]): body["max_tokens"] for body in bodies}
    assert caps == {"planner": 128, "realiser": 256}  # a short JSON plan gets a short cap

    with LocalChatServer(lambda request: Reply(status=500)) as server:
        config = StudentConfig(
            backend="llm", base_url=server.base_url, model="student", decomposer="rules", max_retries=1, timeout_s=5
        )
        simulator = build_simulator(config)
        simulator.backend = OpenAIChatClient(
            EndpointConfig(server.base_url, "student", max_retries=1, backoff_s=0, backoff_max_s=0)
        )
        episode, _ = _episode(simulator, problem)
    assert episode.end_reason == "student_error"


def test_llm_decomposition_is_counted_on_the_opening_turn(gsm8k_items):
    problem = gsm8k_items[0].problem
    decomposition = json.dumps(
        {"units": ["subtraction", "multiplication"], "steps": [["subtraction"], ["multiplication"]]}
    )

    def respond(messages, sampling):
        if messages[0]["content"].startswith("You analyse math problems"):
            return decomposition
        return scripted().script(messages, sampling)

    config = StudentConfig(backend="llm", base_url="http://127.0.0.1:9/v1", model="student")
    simulator = build_simulator(config, ScriptedChatBackend(respond))
    first, _ = _episode(simulator, problem, limits=EpisodeLimits(1))
    second, _ = _episode(simulator, problem, limits=EpisodeLimits(1))
    assert first.student_trace[0].llm_calls == 1 and second.student_trace[0].llm_calls == 0  # decomposed once
    assert set(first.student_trace[0].mastery) == {"subtraction", "multiplication"}


def test_baseline_simulators_need_an_endpoint():
    with pytest.raises(ValueError, match="need an endpoint"):
        StudentConfig(simulator="socraticlm")


def test_garbage_decomposition_falls_back_without_breaking_the_session(gsm8k_items):
    problem = gsm8k_items[0].problem

    def respond(messages, sampling):
        if messages[0]["content"].startswith("You analyse math problems"):
            return '{"units": ["alchemy"]'  # malformed, then (on retry) still malformed
        return scripted().script(messages, sampling)

    simulator = build_simulator(
        StudentConfig(backend="llm", base_url="http://127.0.0.1:9/v1", model="s"), ScriptedChatBackend(respond)
    )
    episode, session = _episode(simulator, problem, limits=EpisodeLimits(2))
    assert session.decomposition.source == "fallback" and simulator.decomposer.stats["fallbacks"] == 1
    assert episode.student_trace[0].llm_calls == 2 and episode.end_reason != "student_error"


def test_a_failed_turn_leaves_the_session_unchanged_for_a_retry(gsm8k_items):
    problem = gsm8k_items[0].problem
    flaky = {"down": True}

    def respond(messages, sampling):
        if flaky["down"] and role(messages) == "realiser":
            return LLMCallError("blip", "timeout", 4)
        return scripted().script(messages, sampling)

    simulator = build_simulator(StudentConfig(**LLM), ScriptedChatBackend(respond))

    async def go():
        session = await simulator.start(problem, CONDITION, 3, "hi")
        with pytest.raises(LLMCallError):
            await session.respond("What is 16 - 3 - 4?")
        assert len(session.trace) == 1 and session.mastery == session.trace[0].mastery
        flaky["down"] = False
        return await session.respond("What is 16 - 3 - 4?"), session

    turn, session = asyncio.run(go())
    assert turn.state.turn == 1 and len(session.trace) == 2
