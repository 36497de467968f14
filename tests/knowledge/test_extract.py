"""The extraction prompt and its strict parser: every way a reply can be wrong has a reason."""

import json

import pytest

from pearl_verl.dialogue.problem import Problem
from pearl_verl.knowledge.curriculum import load_curriculum
from pearl_verl.knowledge.decomposition import DecompositionError
from pearl_verl.knowledge.extract import extraction_messages, parse_extraction, parse_json_object

CURRICULUM = load_curriculum()
PROBLEM = Problem(
    "p1",
    "Tom has 3 boxes of 4 apples and eats 2. How many are left?",
    "Tom has 3 * 4 = 12 apples.\nAfter eating 2 he has 12 - 2 = 10 apples.",
    "10",
)


def test_prompt_lists_vocabulary_and_numbered_steps():
    system, user = extraction_messages(PROBLEM, CURRICULUM)
    assert "percent_change: Percent change" in system["content"] and "exactly 2 lists" in system["content"]
    assert "1. Tom has 3 * 4 = 12 apples." in user["content"] and "2. After eating 2" in user["content"]


def test_valid_reply_with_fence_and_aliases_is_normalised():
    reply = (
        "```json\n"
        + json.dumps({"units": ["Multiplying", "subtraction"], "steps": [["multiplication"], ["Subtracting"]]})
        + "\n```"
    )
    d = parse_extraction(reply, PROBLEM, CURRICULUM, "llm:m:x1")
    assert d.units == ("subtraction", "multiplication") and d.source == "llm"
    assert d.steps[0].units == ("multiplication",) and d.steps[1].units == ("subtraction",)
    assert d.edges == ()  # neither needs the other under the rules (both build on addition only)


def test_step_units_missing_from_units_are_added():
    d = parse_extraction(
        json.dumps({"units": ["multiplication"], "steps": [["multiplication"], ["subtraction"]]}),
        PROBLEM,
        CURRICULUM,
        "x",
    )
    assert set(d.units) == {"multiplication", "subtraction"}


@pytest.mark.parametrize(
    "reply, reason, message",
    [
        ("Sure! The units are addition.", "malformed", "not JSON"),
        ('{"units": ["addition"]', "malformed", "not JSON"),
        ('["addition"]', "malformed", "expected an object"),
        ('Here: {"units": [], "steps": [[], []]}', "malformed", "not JSON"),
        ('{"units": ["addition"], "steps": [[], []], "notes": "x"}', "malformed", "expected exactly"),
        ('{"units": "addition", "steps": [[], []]}', "malformed", "list of strings"),
        ('{"units": ["addition"], "steps": [[]]}', "malformed", "1 step lists; the solution has 2"),
        (
            '{"units": ["addition", "telepathy"], "steps": [[], ["astrology"]]}',
            "unknown_unit",
            r"\['astrology', 'telepathy'\]",
        ),
        ('{"units": [], "steps": [[], []]}', "malformed", "no units"),
    ],
)
def test_bad_replies_are_rejected_with_a_reason(reply, reason, message):
    with pytest.raises(DecompositionError, match=message) as info:
        parse_extraction(reply, PROBLEM, CURRICULUM, "x")
    assert info.value.reason == reason


def test_json_object_parser_is_strict():
    assert parse_json_object(' {"a": 1} ') == {"a": 1}
    assert parse_json_object('```\n{"a": 1}\n```') == {"a": 1}
    with pytest.raises(ValueError, match="not JSON"):
        parse_json_object('{"a": 1} and more')
