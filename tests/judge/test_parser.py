"""The strict output parser: valid judgements parse exactly; every contract breach fails with its reason."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pearl_verl.dims import DIMENSIONS
from pearl_verl.judge.parser import JudgeOutputError, parse_judgement
from pearl_verl.judge.prompt import canonical_output
from pearl_verl.judge.rubric import RUBRIC
from pearl_verl.judge.sanity import rationale_issue

FIRST_RATIONALE = '"rationale": "evidence in turn 2 (statements correct)"'  # acc.statements_correct, in output_text


def test_valid_output_parses_in_rubric_order_with_normalised_scores(make_output):
    scores = parse_judgement(
        make_output({"leak.final_answer": 1, "complete.session_complete": 0, "acc.feedback_correct": 0})
    )
    assert [f"{s.dimension}.{s.criterion}" for s in scores] == [c.id for c in RUBRIC]
    by_id = {f"{s.dimension}.{s.criterion}": s for s in scores}
    assert by_id["leak.final_answer"].raw == 1 and by_id["leak.final_answer"].score == 0.5
    assert by_id["complete.session_complete"].score == 0.0 and by_id["acc.feedback_correct"].score == 0.0
    assert (
        by_id["emotion.encouraging_tone"].score == 1.0
        and by_id["emotion.encouraging_tone"].rationale == "evidence in turn 2 (encouraging tone)"
    )


def test_reasoning_block_and_code_fence_are_tolerated(make_output):
    text = make_output({"meta.reflection": 0})
    for wrapped in (f"<think>\nlet me weigh turn 3...\n</think>\n\n{text}", f"```json\n{text}\n```", f"  {text}\n"):
        assert parse_judgement(wrapped)[RUBRIC.criteria.index(RUBRIC.by_id("meta.reflection"))].raw == 0


@pytest.mark.parametrize(
    ("mutate", "reason"),
    [
        (lambda t: t[: len(t) // 2], "invalid_json"),  # truncated body
        (lambda t: "Here are my scores: " + t, "invalid_json"),  # prose around the object
        (lambda t: t + "\nHope this helps!", "invalid_json"),
        (lambda t: "[" + t + "]", "invalid_json"),
        (lambda t: "<think>never closed " + t, "truncated"),
        (lambda t: t.replace('"score": 2', '"score": NaN', 1), "invalid_json"),
        (
            lambda t: t.replace('{"acc": {', '{"acc": {"statements_correct": {"score": 0, "rationale": "x"}, ', 1),
            "invalid_json",
        ),
        (lambda t: t.replace('"score": 2', '"score": 3', 1), "bad_score"),  # out of range
        (lambda t: t.replace('"score": 2', '"score": -1', 1), "bad_score"),
        (lambda t: t.replace('"score": 2', '"score": 2.0', 1), "bad_score"),
        (lambda t: t.replace('"score": 2', '"score": "2"', 1), "bad_score"),
        (lambda t: t.replace('"score": 2', '"score": true', 1), "bad_score"),
        (lambda t: t.replace(FIRST_RATIONALE, '"rationale": "  "', 1), "bad_rationale"),
        (lambda t: t.replace(FIRST_RATIONALE, '"rationale": 7', 1), "bad_rationale"),
    ],
)
def test_malformed_outputs_fail_with_their_reason(make_output, mutate, reason):
    with pytest.raises(JudgeOutputError) as info:
        parse_judgement(mutate(make_output()))
    assert info.value.reason == reason


def test_missing_and_unexpected_keys_are_named(make_output):
    with pytest.raises(JudgeOutputError, match=r"'leak' lacks \['key_steps'\]") as info:
        parse_judgement(make_output(drop={"leak.key_steps"}))
    assert info.value.reason == "missing"
    body = json.loads(make_output())
    del body["emotion"]
    with pytest.raises(JudgeOutputError, match=r"lacks \['emotion'\]"):
        parse_judgement(json.dumps(body))
    with pytest.raises(JudgeOutputError, match="unexpected keys") as info:
        parse_judgement(make_output(extra={"overall": {"score": 2, "rationale": "x"}}))
    assert info.value.reason == "unexpected_key"
    body = json.loads(make_output())
    body["acc"]["statements_correct"]["confidence"] = 0.9
    with pytest.raises(JudgeOutputError, match="unexpected keys"):
        parse_judgement(json.dumps(body))


def test_gate_criterion_accepts_only_zero_or_one(make_output):
    with pytest.raises(JudgeOutputError, match=r"session_complete.score=2 is not on the scale \[0, 1\]"):
        parse_judgement(make_output({"complete.session_complete": 2}))


def test_length_finish_reason_is_a_truncation_even_when_the_text_parses(make_output):
    with pytest.raises(JudgeOutputError) as info:
        parse_judgement(make_output(), finish_reason="length")
    assert info.value.reason == "truncated"


def _rationale(criterion, text):
    return rationale_issue(f"Turn 2 shows {criterion.key}: {text}", criterion.dimension, criterion.key) is None


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_canonical_output_round_trips(data):
    target = {
        d: {
            # any text, after words that make it a rationale of this criterion (pearl_verl.judge.sanity)
            c.key: (data.draw(st.sampled_from(c.scores)),
                    f"Turn 2 shows {c.key}: " + data.draw(st.text(max_size=40).filter(lambda t: _rationale(c, t))))
            for c in RUBRIC.for_dimension(d)
        }
        for d in DIMENSIONS
    }
    parsed = parse_judgement(canonical_output(target))
    assert [(s.raw, s.rationale) for s in parsed] == [
        (target[c.dimension][c.key][0], target[c.dimension][c.key][1].strip()) for c in RUBRIC
    ]


def _echoed_skeleton():
    """The prompt's output skeleton copied back with each score placeholder filled by its top score."""
    from pearl_verl.judge.prompt import output_contract

    skeleton = output_contract()[output_contract().index("\n{") + 1 :]
    for criterion in RUBRIC.criteria:
        scale = " or ".join(str(s) for s in criterion.scores)
        skeleton = skeleton.replace(f'"score": <{scale}>', f'"score": {max(criterion.scores)}')
    return skeleton


def test_the_prompt_skeleton_echoed_back_with_scores_is_rejected():
    # SmolLM2-135M did this against a real server: every dimension would have scored 1.0
    text = _echoed_skeleton()
    assert "<" not in text.replace('"<one or two sentences>"', "")  # only the rationale placeholders are left
    with pytest.raises(JudgeOutputError, match=r"placeholder copied back") as info:
        parse_judgement(text)
    assert info.value.reason == "bad_rationale"


@pytest.mark.parametrize(
    "echo", ["<one or two sentences>", "One or two sentences.", " <one  or two sentences…> ", "<0 or 1>", "0 or 1 or 2"]
)
def test_a_placeholder_rationale_is_rejected_in_any_one_criterion(make_output, echo):
    text = make_output()
    data = json.loads(text)
    data["meta"][next(iter(data["meta"]))]["rationale"] = echo
    with pytest.raises(JudgeOutputError, match="placeholder") as info:
        parse_judgement(json.dumps(data))
    assert info.value.reason == "bad_rationale"


def test_a_rationale_that_only_mentions_the_phrase_is_kept(make_output):
    data = json.loads(make_output())
    key = next(iter(data["meta"]))
    data["meta"][key]["rationale"] = "In one or two sentences the tutor asks for reflection (turn 4)."
    scores = parse_judgement(json.dumps(data))
    assert any(s.rationale.startswith("In one or two sentences") for s in scores)
