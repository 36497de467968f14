"""A judgement whose rationales name nothing in the dialogue is refused, and a real one is not.

The junk is what a weak served judge wrote (SmolLM2-135M behind llama-cpp-python, json_object): the
scores of such replies cycle through the scale, so accepting them would put invented scores into
training. The offline judge's rationales pass (tests/judge/test_offline_judge.py).
"""

import asyncio

import pytest

from pearl_verl.dims import DIMENSIONS
from pearl_verl.judge.llm_judge import LLMJudge
from pearl_verl.judge.parser import JudgeOutputError, parse_judgement
from pearl_verl.judge.prompt import canonical_output
from pearl_verl.judge.rubric import RUBRIC
from pearl_verl.judge.sanity import judgement_issue, rationale_issue
from pearl_verl.llm.scripted import ScriptedChatBackend


def _judgement(rationale_of) -> str:
    """A judgement with every criterion at its top score and ``rationale_of(index, criterion)`` as rationale."""
    criteria = {c.id: i for i, c in enumerate(RUBRIC.criteria)}
    return canonical_output({d: {c.key: (c.high, rationale_of(criteria[c.id], c)) for c in RUBRIC.for_dimension(d)}
                             for d in DIMENSIONS})


JUNK = {
    "a number": lambda i, c: "10",
    "a fragment of JSON": lambda i, c: "5},",
    "one word for every criterion": lambda i, c: "addition",
    "the numbers 1 to 24": lambda i, c: str(i + 1),
    "a scale word": lambda i, c: "very-high",
    "an ellipsis": lambda i, c: "...",
    "the criterion's key": lambda i, c: c.key,
    "the criterion's id": lambda i, c: c.id,
    "one word repeated": lambda i, c: f"turn {i} " + "addition " * 6,
    "one sentence for every criterion, its number aside": lambda i, c: f"Turn {i % 9 + 1} shows the tutor helped.",
    "the prompt's request copied": lambda i, c: "a short rationale citing the evidence (turn numbers)",
    "a placeholder variant": lambda i, c: "Rationale here.",
    "four sentences cycled": lambda i, c: CYCLED[i % 4],
}
CYCLED = ("No feedback from the tutor was provided", "Yes feedback from the tutor was received",
          "The towness of a rule is not allowed", "No feedback from the tutor was provided for the input")
"""What SmolLM2 cycled over the 24 criteria in the json_object run (tests/judge/fixtures)."""


@pytest.mark.parametrize("rationale_of", JUNK.values(), ids=JUNK.keys())
def test_junk_rationales_are_refused_as_junk(rationale_of):
    with pytest.raises(JudgeOutputError) as info:
        parse_judgement(_judgement(rationale_of))
    assert info.value.reason == "junk_rationale"
    assert "not a judgement of this dialogue" in str(info.value)


def test_the_refusal_names_the_criterion_and_the_rule():
    assert rationale_issue("very-high", "leak", "final_answer") == (
        "leak.final_answer.rationale 'very-high' names nothing in the dialogue (0 content words; at least 2)")
    assert "repeats 'addition' 6 times in 8 words" in rationale_issue(
        "turn three " + "addition " * 6, "acc", "statements_correct")
    scores = parse_judgement(_judgement(lambda i, c: f"Turn {i} shows {c.key}"))
    same = [s.__class__(s.dimension, s.criterion, s.raw, s.score, "The tutor asked a question.") for s in scores]
    assert judgement_issue(same, RUBRIC) == "24 of 24 criteria have the same rationale ('The tutor asked a question.')"


def test_a_few_shared_rationales_and_short_cited_ones_pass():
    shared = {"leak.final_answer", "leak.key_steps", "complete.conclusion"}
    text = _judgement(lambda i, c: "The tutor never states 12." if c.id in shared else f"Turn {i % 5}: {c.key} holds")
    assert len(parse_judgement(text)) == len(RUBRIC.criteria)


def test_a_refused_judgement_is_retried_then_flagged_and_counted(episode):
    junk = _judgement(JUNK["one word for every criterion"])
    backend = ScriptedChatBackend(lambda messages, sampling: junk)
    judge = LLMJudge(backend, parse_retries=2)
    result = asyncio.run(judge.judge(episode))
    assert not result.ok and result.dims is None and len(backend.calls) == 3
    assert judge.stats.parse_failures == {"junk_rationale": 3}
    assert judge.stats.failure_reasons == {"parse_junk_rationale": 1}
    assert "names nothing in the dialogue" in result.error
