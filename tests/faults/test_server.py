"""The fault server against the real chat client: each fault kind's effect, the recorded plan, retries."""

import asyncio
import json
import time

import pytest

from pearl_verl.dialogue.episode_runner import EpisodeLimits, policy_step, run_episode
from pearl_verl.dialogue.problem import Problem
from pearl_verl.dialogue.student_contract import CognitiveProfile, StudentCondition
from pearl_verl.faults.checks import predict_call
from pearl_verl.faults.plan import FaultConfig, FaultKind, request_fingerprint
from pearl_verl.faults.recording import RecordingBackend, tagged
from pearl_verl.faults.responders import expected_result, judge_reply, student_reply
from pearl_verl.faults.server import FaultServer
from pearl_verl.judge.judge_config import JudgeConfig, build_judge
from pearl_verl.judge.parser import parse_judgement
from pearl_verl.judge.prompt import judge_messages
from pearl_verl.llm import EndpointConfig, LLMCallError, OpenAIChatClient, SamplingConfig
from pearl_verl.student.factory import build_simulator
from pearl_verl.student.student_config import StudentConfig
from pearl_verl.student.student_prompts import parse_planner
from pearl_verl.tutor.scripted import ScriptedSocraticTutor

MESSAGES = [{"role": "user", "content": "What is 2 + 2?"}]
PROBLEM = Problem(
    "drill-1", "Ann has 3 bags of 4 apples and eats 2. How many are left?",
    "Ann has 3 * 4 = 12 apples.\nAfter eating 2 she has 12 - 2 = 10 apples.", "10", "gsm8k",
)  # fmt: skip


def _client(server, **overrides):
    settings = dict(base_url=server.base_url, model="m", timeout_s=0.5, max_retries=0, backoff_s=0.0, backoff_max_s=0.0)
    settings.update(overrides)
    return OpenAIChatClient(EndpointConfig(**settings), seed=0)


def _only(kind, **settings):
    return FaultConfig(rates={kind.value: 1.0}, hold_s=0.8, **settings)


@pytest.mark.parametrize(
    ("kind", "reason", "detail"),
    [
        (FaultKind.TIMEOUT, "timeout", "within 0.5s"),
        (FaultKind.HTTP_429, "http_429", "injected HTTP 429"),
        (FaultKind.HTTP_500, "http_500", "injected HTTP 500"),
        (FaultKind.RESET, "connection", "reset by peer"),
        (FaultKind.MALFORMED_JSON, "bad_response", "502 Bad Gateway"),
        (FaultKind.TRUNCATED_JSON, "bad_response", "Unterminated string"),
        (FaultKind.CUT_BODY, "connection", "Not enough data to satisfy content length"),
    ],
)
def test_transport_faults_fail_the_attempt_with_their_reason(kind, reason, detail):
    with FaultServer(lambda body: "four", _only(kind)) as server:
        client = _client(server)
        with pytest.raises(LLMCallError) as error:
            asyncio.run(client.chat(MESSAGES))
    assert error.value.reason == reason and error.value.attempts == 1
    assert detail in str(error.value)
    assert [i.kind for i in server.injections] == [kind]
    assert server.injections[0].fingerprint == request_fingerprint(server.requests[0])


def test_empty_content_and_slow_streams_reach_the_caller_as_answers():
    with FaultServer(lambda body: "four", _only(FaultKind.EMPTY_CONTENT)) as server:
        result = asyncio.run(_client(server).chat(MESSAGES))
    assert result.texts == ("",) and result.attempts == 1  # the caller's strict parser must reject it

    config = _only(FaultKind.SLOW_STREAM, stream_chunks=5, stream_delay_s=0.06)
    with FaultServer(lambda body: "the answer is four", config) as server:
        start = time.perf_counter()
        result = asyncio.run(_client(server, timeout_s=2.0).chat(MESSAGES))
        elapsed = time.perf_counter() - start
    assert result.text == "the answer is four" and elapsed >= 5 * 0.06
    with FaultServer(lambda body: "four", config) as server:  # slower than the timeout: a timeout
        with pytest.raises(LLMCallError, match="timeout"):
            asyncio.run(_client(server, timeout_s=0.15).chat(MESSAGES))


def test_rate_limits_send_retry_after_and_the_client_honours_it():
    config = _only(FaultKind.HTTP_429, retry_after_s=0.05)
    with FaultServer(lambda body: "four", config) as server:
        client = _client(server, max_retries=2, backoff_s=5.0, backoff_max_s=10.0)  # 5 s without Retry-After
        with pytest.raises(LLMCallError, match="http_429"):
            asyncio.run(client.chat(MESSAGES))
    assert client.usage.backoff_s == pytest.approx(2 * 0.05) and len(server.requests) == 3


def test_retries_of_one_call_walk_the_plan_and_end_as_predicted():
    config = FaultConfig.uniform(0.6, seed=5, hold_s=0.4)
    with FaultServer(lambda body: "four", config) as server:
        client = _client(server, timeout_s=0.3, max_retries=3)
        outcomes = []
        for i in range(25):
            messages = [{"role": "user", "content": f"question {i}"}]
            try:
                outcomes.append(("ok", asyncio.run(client.chat(messages)).text))
            except LLMCallError as exc:
                outcomes.append(("failed", exc.attempts))
    by_call = server.plan.by_fingerprint()
    assert len(by_call) == 25 and sum(map(len, by_call.values())) == len(server.requests)
    seen = set()
    for (status, value), injections in zip(outcomes, by_call.values(), strict=True):
        kinds = [i.kind for i in injections]
        assert kinds == [server.plan.kind_for(injections[0].fingerprint, k) for k in range(len(kinds))]
        predicted = predict_call(kinds, bound=4)
        seen |= {"failed" if predicted is None else predicted, "retried" if len(kinds) > 1 else "first try"}
        if predicted is None:
            assert status == "failed" and value == 4 and len(kinds) == 4
        else:
            assert status == "ok" and value == ("" if predicted is FaultKind.EMPTY_CONTENT else "four")
            assert kinds[-1] not in (FaultKind.TIMEOUT, FaultKind.RESET)  # the last attempt got through
    assert {"failed", "retried", FaultKind.EMPTY_CONTENT} <= seen  # seed 5 exercises every path


def test_the_recording_backend_sees_the_servers_fingerprints_and_tags():
    with FaultServer(lambda body: "four", FaultConfig.uniform(0.0)) as server:
        recorder = RecordingBackend(_client(server), "m")

        async def tagged_call(tag, content):
            with tagged(tag):
                await recorder.chat([{"role": "user", "content": content}], SamplingConfig(seed=7, n=2))

        async def both():
            await asyncio.gather(tagged_call("a", "first"), tagged_call("b", "second"))

        asyncio.run(both())
    served = {request_fingerprint(body) for body in server.requests}
    assert {c.fingerprint for c in recorder.calls} == served and len(served) == 2
    records = {(c.tag, c.ok, c.attempts, c.text) for c in recorder.calls}
    assert records == {("a", True, 1, "four"), ("b", True, 1, "four")}
    assert all(body["seed"] == 7 and body["n"] == 2 for body in server.requests)


def test_healthy_student_answers_drive_the_real_simulator_without_refines():
    with FaultServer(student_reply, FaultConfig.uniform(0.0), model="student") as server:
        config = StudentConfig(backend="llm", base_url=server.base_url, model="student", decomposer="rules")
        simulator = build_simulator(config)
        condition = StudentCondition(CognitiveProfile(3, 3, 3, 3, 3), seed=2)

        async def episode():
            opening = simulator.opening(PROBLEM, condition)
            session = await simulator.start(PROBLEM, condition, 1, opening)
            record = await run_episode(
                PROBLEM, condition, session, opening, policy_step(ScriptedSocraticTutor(), PROBLEM), EpisodeLimits(8)
            )
            return record, session

        record, session = asyncio.run(episode())
    assert record.end_reason != "student_error" and len(record.turns) >= 3
    assert sum(s.llm_calls for s in record.student_trace) == len(server.requests)
    assert session.usage["check_failures"] == 0  # every realised message matched its plan
    planner = [b for b in server.requests if b["messages"][0]["content"].startswith("You plan")]
    assert planner and all(parse_planner(student_reply(b)) for b in planner)


def test_the_judge_reports_the_healthy_judgement_over_http(episode):
    with FaultServer(judge_reply, FaultConfig.uniform(0.0), model="judge") as server:
        judge = build_judge(JudgeConfig(base_url=server.base_url, model="judge", seed=1))
        result = asyncio.run(judge.judge(episode))
    user = judge_messages(episode)[1]["content"]
    assert result.ok and result.dims == expected_result(user).dims and result.gate == expected_result(user).gate
    body = server.requests[0]
    assert parse_judgement(judge_reply(body)) and json.loads(judge_reply(body)).keys() == result.dims.keys()
