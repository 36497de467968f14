"""Replies of a weak served judge, recorded verbatim, are refused: none becomes a score.

``fixtures/weak_judge_replies.json`` holds every judge reply of two ``bench/real_server.py`` runs
(SmolLM2-135M-Instruct Q4_1 behind llama-cpp-python, structured output ``auto``, which that server
took as ``json_object``, and ``json_object`` itself): the served model judging the shipped
calibration pairs and eval-tutor's dialogues. Some copy the prompt's placeholder, some are not
JSON, and the rest fill the format with rationales such as "1.8" or "no", or cycle four sentences
through the 24 criteria. Those last ones pass every other rule of the parser: the junk check
(pearl_verl.judge.sanity) is what keeps their cycling scores out of training.
"""

import json
from pathlib import Path

import pytest

from pearl_verl.judge import parser
from pearl_verl.judge.parser import JudgeOutputError, parse_judgement

RECORDED = json.loads((Path(__file__).parent / "fixtures" / "weak_judge_replies.json").read_text())
REPLIES = RECORDED["replies"]


@pytest.mark.parametrize("reply", REPLIES, ids=[f"reply{i}" for i in range(len(REPLIES))])
def test_no_recorded_reply_of_the_weak_judge_parses(reply):
    with pytest.raises(JudgeOutputError):
        parse_judgement(reply["text"], finish_reason=reply["finish_reason"])


def test_the_junk_check_is_what_refuses_the_replies_that_fill_the_format(monkeypatch):
    def reason(reply):
        try:
            parse_judgement(reply["text"], finish_reason=reply["finish_reason"])
        except JudgeOutputError as exc:
            return exc.reason
        return "parsed"

    junk = [reply for reply in REPLIES if reason(reply) == "junk_rationale"]
    assert len(junk) == RECORDED["junk_rationale"] > 0
    monkeypatch.setattr(parser, "judgement_issue", lambda scores, rubric: None)  # the parser as it was before
    assert [reason(reply) for reply in junk] == ["parsed"] * len(junk)


def test_a_few_sentences_cycled_through_the_criteria_are_refused():
    cycled = [r for r in REPLIES if "The towness of a rule is not allowed" in r["text"]]
    assert cycled  # recorded from the json_object run: 4 rationales for 24 criteria, scores 0, 1, 2, 0, ...
    with pytest.raises(JudgeOutputError, match=r"24 criteria share 4 rationales, cycled") as refused:
        parse_judgement(cycled[0]["text"], finish_reason=cycled[0]["finish_reason"])
    assert refused.value.reason == "junk_rationale"
