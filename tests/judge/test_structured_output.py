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
from pearl_verl.student.prompts import PLANNER_SCHEMA, parse_planner

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
    from pearl_verl.student.config import StudentConfig
    from pearl_verl.student.factory import build_simulator
    from pearl_verl.student.types import StudentCondition

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
