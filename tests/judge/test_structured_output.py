"""Structured output: each JSON reply we parse has a schema, sent the way the endpoint takes it.

The schemas must accept every reply the strict parsers accept (or a server would refuse valid
output) and reject what they reject at the type level; the client sends them only where
``structured_output`` says the server has it.
"""

import asyncio
import json

import jsonschema
import pytest

from pearl_verl.judge.prompt import judgement_schema
from pearl_verl.judge.rubric import RUBRIC
from pearl_verl.knowledge.curriculum import load_curriculum
from pearl_verl.knowledge.extract import extraction_schema
from pearl_verl.llm import EndpointConfig, OpenAIChatClient, SamplingConfig
from pearl_verl.llm.local_server import LocalChatServer
from pearl_verl.student.student_prompts import PLANNER_SCHEMA, parse_planner

SCHEMA = json.dumps({"title": "tiny", "type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]})


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("none", None),
        ("json_schema", {"type": "json_schema", "json_schema": {"name": "tiny", "schema": json.loads(SCHEMA)}}),
        ("json_object", {"type": "json_object", "schema": json.loads(SCHEMA)}),
    ],
)
def test_the_client_sends_the_schema_as_the_endpoint_takes_it(mode, expected):
    with LocalChatServer(lambda body: '{"a": 1}') as server:
        client = OpenAIChatClient(EndpointConfig(server.base_url, "m", structured_output=mode))
        asyncio.run(client.chat([{"role": "user", "content": "x"}], SamplingConfig(response_schema=SCHEMA)))
        asyncio.run(client.chat([{"role": "user", "content": "x"}], SamplingConfig()))  # no schema: nothing sent
        with_schema, without = list(server.requests)
    assert with_schema.get("response_format") == expected
    assert "response_format" not in without


def test_an_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="structured_output='grammar' must be one of"):
        EndpointConfig("http://127.0.0.1:9/v1", "m", structured_output="grammar")


def test_the_judgement_schema_accepts_the_contract_and_rejects_off_scale_scores(make_output):
    schema = json.loads(judgement_schema())
    jsonschema.validate(json.loads(make_output()), schema)
    # the prompt's order: a constrained decoder writes dimensions and criteria as the prompt lists them
    assert [c for d in schema["properties"].values() for c in d["properties"]] == [c.key for c in RUBRIC.criteria]
    bad = json.loads(make_output())
    dimension = next(iter(bad))
    criterion = next(iter(bad[dimension]))
    for value in (99, "2", 1.5):
        bad[dimension][criterion]["score"] = value
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)


def test_the_planner_schema_accepts_what_the_parser_accepts():
    schema = json.loads(PLANNER_SCHEMA)
    for reply in ('{"behaviours": ["uncertainty", "help_seeking"], "leave": false}',
                  '{"behaviours": [], "leave": true, "reason": "fed up"}'):
        parse_planner(reply)
        jsonschema.validate(json.loads(reply), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"behaviours": ["boredom"], "leave": False}, schema)


def test_the_extraction_schema_fixes_the_step_count_and_the_vocabulary():
    curriculum = load_curriculum()
    unit = sorted(curriculum.units)[0]
    reply = {"units": [unit], "steps": [[unit], []]}
    n_steps = 2
    schema = json.loads(extraction_schema(curriculum, n_steps))
    jsonschema.validate(reply, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"units": [unit], "steps": [[unit]]}, schema)  # one list per step
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"units": ["not_a_unit"], "steps": [[], []]}, schema)


def test_the_judge_command_sends_its_schema(tmp_path, make_episode, make_output):
    from pearl_verl import cli

    source, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    episode = make_episode(["Hi", "What is 3 x 4?", "12"])
    source.write_text(json.dumps({"id": "d0", "episode": episode.to_dict()}) + "\n")
    with LocalChatServer(lambda body: make_output()) as server:
        code = cli.main(["judge", str(source), "-o", str(out), "--base-url", server.base_url, "--model", "m",
                         "--structured-output", "json_schema", "--no-progress"])
        sent = server.requests[0]
    assert code == 0 and json.loads(out.read_text())["judge_ok"] == 1
    assert sent["response_format"]["json_schema"]["schema"] == json.loads(judgement_schema())


def test_the_student_planner_sends_its_schema_and_the_realiser_none():
    from pearl_verl.data.location import data_dir
    from pearl_verl.data.problem_files import load_problems
    from pearl_verl.dialogue.student_contract import StudentCondition
    from pearl_verl.student.factory import build_simulator
    from pearl_verl.student.student_config import StudentConfig

    def respond(body):
        if body["messages"][0]["content"].startswith("You plan the next turn"):
            return '{"behaviours": ["uncertainty", "help_seeking"], "leave": false}'
        return "I'm not sure what to do here, can you help?"

    problem, condition = load_problems(data_dir() / "gsm8k" / "test.jsonl", 1)[0].problem, StudentCondition(seed=1)
    with LocalChatServer(respond, model="student") as server:
        config = StudentConfig(backend="llm", base_url=server.base_url, model="student", decomposer="rules",
                               structured_output="json_schema")
        simulator = build_simulator(config)

        async def reply():
            session = await simulator.start(problem, condition, 0, simulator.opening(problem, condition))
            return await session.respond("What do you know so far?")

        asyncio.run(reply())
        requests = list(server.requests)
    planner = [r for r in requests if r["messages"][0]["content"].startswith("You plan the next turn")]
    assert planner and all(r["response_format"]["json_schema"]["schema"] == json.loads(PLANNER_SCHEMA) for r in planner)
    assert all("response_format" not in r for r in requests if r not in planner)


def _refusing(*refused, status=400):
    """A server that answers a request whose response_format type is in ``refused`` with ``status``."""
    from pearl_verl.llm.local_server import Reply

    def respond(body):
        kind = (body.get("response_format") or {}).get("type", "none")
        if kind in refused:
            return Reply(status=status, error_message=f"response_format {kind} is not supported")
        return '{"a": 1}'

    return respond


def _chat_twice(server, **endpoint):
    client = OpenAIChatClient(EndpointConfig(server.base_url, "m", structured_output="auto", max_retries=1,
                                             backoff_s=0.0, backoff_max_s=0.0, **endpoint))
    for _ in range(2):
        result = asyncio.run(client.chat([{"role": "user", "content": "x"}], SamplingConfig(response_schema=SCHEMA)))
        assert result.text == '{"a": 1}'
    return client, [(r.get("response_format") or {}).get("type", "none") for r in server.requests]


@pytest.mark.parametrize(("refused", "status", "sent"), [
    ((), 400, ["json_schema", "json_schema"]),  # vLLM: the strictest, at once
    (("json_schema",), 400, ["json_schema", "json_object", "json_object"]),
    (("json_schema",), 500, ["json_schema", "json_schema", "json_object", "json_object"]),  # llama-cpp-python: 500
    (("json_schema", "json_object"), 422, ["json_schema", "json_object", "none", "none"]),
])
def test_auto_keeps_the_first_mode_the_server_takes(refused, status, sent):
    with LocalChatServer(_refusing(*refused, status=status)) as server:
        client, kinds = _chat_twice(server)
    assert kinds == sent  # a 5xx is retried first (it may be passing); a 4xx is a refusal at once
    usage = client.usage.snapshot()
    assert usage["structured_output"] == sent[-1] and list(usage["refused_modes"]) == list(refused)
    assert all(f"http_{status}" in why and "is not supported" in why for why in usage["refused_modes"].values())


def test_auto_names_the_refusals_in_the_error_when_no_mode_gets_through():
    from pearl_verl.llm import LLMCallError

    with LocalChatServer(_refusing("json_schema", "json_object", "none", status=400)) as server:
        client = OpenAIChatClient(EndpointConfig(server.base_url, "m", structured_output="auto"))
        with pytest.raises(LLMCallError) as failed:
            asyncio.run(client.chat([{"role": "user", "content": "x"}], SamplingConfig(response_schema=SCHEMA)))
    message = str(failed.value)
    assert message.startswith("http_400 from ") and "response_format none is not supported" in message
    assert "structured output refused before: json_schema (http_400: " in message and "json_object (http_400: " in message


def test_a_timeout_is_no_refusal():
    from pearl_verl.llm.local_server import Reply

    calls = []

    def respond(body):
        calls.append(body)
        return Reply(text='{"a": 1}', delay_s=2.0 if len(calls) == 1 else 0.0)

    with LocalChatServer(respond) as server:
        client, kinds = _chat_twice(server, timeout_s=0.5)
    assert kinds == ["json_schema"] * 3 and client.usage.refused_modes == {}


def test_a_server_failing_everything_is_failing_not_refusing():
    """500 to every mode: the call fails with the first failure, and no mode is taken as refused."""
    from pearl_verl.llm import LLMCallError

    with LocalChatServer(_refusing("json_schema", "json_object", "none", status=500)) as server:
        client = OpenAIChatClient(EndpointConfig(server.base_url, "m", structured_output="auto", max_retries=1,
                                                 backoff_s=0.0, backoff_max_s=0.0))
        for _ in range(2):
            with pytest.raises(LLMCallError) as failed:
                asyncio.run(client.chat([{"role": "user", "content": "x"}], SamplingConfig(response_schema=SCHEMA)))
        kinds = [(r.get("response_format") or {}).get("type", "none") for r in server.requests]
    assert kinds == ["json_schema", "json_schema", "json_object", "none"] * 2  # the next call starts over
    assert str(failed.value).startswith("http_500 after 4 attempts: ") and "response_format json_schema" in str(
        failed.value) and "(structured output json_schema, json_object and none all failed)" in str(failed.value)
    assert client.usage.refused_modes == {} and client.usage.structured_output is None


def test_calls_in_flight_follow_the_mode_another_call_found():
    """A 500 to json_schema after another call got json_schema through is the server failing, not a refusal:
    no probing of the other modes."""
    import threading

    from pearl_verl.llm import LLMCallError
    from pearl_verl.llm.local_server import Reply

    fast_done = threading.Event()  # set by the test once the client holds the fast answer: no race on timing

    async def respond(body):  # "fast" at once; "slow" only after the client has taken the fast answer
        if body["messages"][0]["content"] == "slow":
            while not fast_done.is_set():
                await asyncio.sleep(0.01)
            return Reply(status=500, error_message="overloaded")
        return '{"a": 1}'

    async def both(client):
        schema = SamplingConfig(response_schema=SCHEMA)

        async def fast_call():
            try:
                return await client.chat([{"role": "user", "content": "fast"}], schema)
            finally:
                fast_done.set()

        return await asyncio.gather(client.chat([{"role": "user", "content": "slow"}], schema), fast_call(),
                                    return_exceptions=True)

    with LocalChatServer(respond) as server:
        client = OpenAIChatClient(EndpointConfig(server.base_url, "m", structured_output="auto", max_retries=0))
        slow, fast = asyncio.run(both(client))
        kinds = sorted(((r.get("response_format") or {}).get("type", "none"), r["messages"][0]["content"])
                       for r in server.requests)
    assert fast.text == '{"a": 1}' and isinstance(slow, LLMCallError) and "overloaded" in str(slow)
    assert kinds == [("json_schema", "fast"), ("json_schema", "slow")]
    assert client.usage.structured_output == "json_schema" and client.usage.refused_modes == {}
