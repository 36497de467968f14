"""The annotator's strict label schema, its retries and flags over a real local HTTP server, and planned labels."""

import json

import pytest

from pearl_verl.dialogue.problem import Problem
from pearl_verl.dialogue.student_contract import StudentTurnState
from pearl_verl.eval.annotate import (
    PLANNED_SOURCE,
    AnnotationError,
    LLMAnnotator,
    PlannedLabels,
    annotation_messages,
    parse_annotation,
)
from pearl_verl.llm.chat_types import EndpointConfig
from pearl_verl.llm.client import OpenAIChatClient
from pearl_verl.llm.local_server import LocalChatServer, Reply

PROBLEM = Problem("p1", "What is 3 * 4 - 2?", "3 * 4 = 12\n12 - 2 = 10", "10", "gsm8k")


@pytest.fixture
def stuck_episode(make_episode):
    """A cut-off dialogue of two student replies whose planned labels include one outside the taxonomy."""
    texts = ["Hi, I need help with 3 * 4 - 2.", "What is 3 * 4?", "Um, 12?", "Good, and then?", "I'm stuck, is it 11?"]
    trace = (
        StudentTurnState(0, (), "none", {}),
        StudentTurnState(1, ("uncertainty", "feedback_uptake"), "correct", {}),
        StudentTurnState(2, ("guessing", "not_a_label"), "incorrect", {}),
    )
    return make_episode(texts, "turn_limit", problem=PROBLEM, trace=trace)


VALID = {
    "turns": [
        {"turn": 1, "attempt": "correct", "labels": ["uncertainty"]},
        {"turn": 2, "attempt": "incorrect", "labels": ["uncertainty", "guessing"]},
    ]
}


def test_valid_output_parses_in_order():
    turns = parse_annotation(json.dumps(VALID), 2)
    assert [t.attempt for t in turns] == ["correct", "incorrect"]
    assert turns[1].labels == frozenset({"uncertainty", "guessing"})
    fenced = "```json\n" + json.dumps(VALID) + "\n```"
    assert parse_annotation(fenced, 2) == turns
    assert parse_annotation("<think>hmm</think>" + json.dumps(VALID), 2) == turns


@pytest.mark.parametrize(
    ("mutate", "match"),
    [
        (lambda d: d["turns"].pop(), "1 entries for 2"),
        (lambda d: d["turns"][0].update(turn=2), "numbered 2"),
        (lambda d: d["turns"][0].update(attempt="mostly"), "attempt 'mostly'"),
        (lambda d: d["turns"][0].update(labels=["confused"]), "taxonomy labels"),
        (lambda d: d["turns"][0].update(labels=["guessing", "guessing"]), "repeat"),
        (lambda d: d["turns"][0].update(note="x"), "exactly the keys"),
        (lambda d: d.update(summary="x"), "exactly"),
    ],
)
def test_schema_violations_fail(mutate, match):
    data = json.loads(json.dumps(VALID))
    mutate(data)
    with pytest.raises(AnnotationError, match=match):
        parse_annotation(json.dumps(data), 2)


def test_prose_around_json_fails():
    with pytest.raises(AnnotationError, match="not one JSON object"):
        parse_annotation("Here you go: " + json.dumps(VALID), 2)


def test_prompt_numbers_replies_and_excludes_the_opening(stuck_episode):
    user = annotation_messages(stuck_episode)[1]["content"]
    assert "[Student (opening, not annotated)]" in user
    assert "[Student reply 1]: Um, 12?" in user and "[Student reply 2]" in user
    assert "Annotate all 2 student replies." in user


async def test_planned_labels_come_from_the_trace_and_are_labelled_as_such(stuck_episode):
    annotation = await PlannedLabels().annotate(stuck_episode)
    assert annotation.ok and annotation.source == PLANNED_SOURCE
    assert [t.attempt for t in annotation.turns] == ["correct", "incorrect"]
    assert annotation.turns[1].labels == frozenset({"guessing"})  # labels outside the taxonomy are dropped


def client(server, retries=0):
    return OpenAIChatClient(EndpointConfig(server.base_url, "annotator", max_retries=retries, backoff_s=0.0))


async def test_llm_annotator_retries_a_bad_output_then_succeeds(stuck_episode):
    answers = iter(["not json", json.dumps(VALID)])
    with LocalChatServer(lambda body: next(answers)) as server:
        annotation = await LLMAnnotator(client(server), "annotator").annotate(stuck_episode)
    assert annotation.ok and annotation.attempts == 2 and annotation.source == "llm:annotator"
    assert [t.attempt for t in annotation.turns] == ["correct", "incorrect"]


async def test_llm_annotator_flags_after_its_retries_and_on_a_dead_endpoint(stuck_episode):
    with LocalChatServer(lambda body: '{"turns": []}') as server:
        bad = await LLMAnnotator(client(server), "a", parse_retries=1).annotate(stuck_episode)
        assert len(server.requests) == 2
    assert not bad.ok and bad.turns == () and "0 entries for 2" in bad.error
    with LocalChatServer(lambda body: Reply(status=500)) as server:
        dead = await LLMAnnotator(client(server), "a").annotate(stuck_episode)
    assert not dead.ok and "annotator call failed" in dead.error


async def test_truncated_output_is_a_failure(stuck_episode):
    with LocalChatServer(lambda body: Reply(text=json.dumps(VALID), finish_reason="length")) as server:
        annotation = await LLMAnnotator(client(server), "a", parse_retries=0).annotate(stuck_episode)
    assert not annotation.ok and "cut off" in annotation.error
