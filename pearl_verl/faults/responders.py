"""Healthy answers of the fault server: a scripted student endpoint and a scripted judge endpoint.

Deterministic functions of the request (seeded by a hash of its content), so a drill knows exactly
what a healthy answer to any request was and can tell a real score from an invented one. They are
test doubles for the student and judge models; their content is plausible, not the paper's.

- :func:`student_reply` answers the PEARL student's planner (one JSON object), realiser and refiner
  (a message that does what the prompt's intent line asks, so the simulator's cheap consistency
  check passes).
- :func:`judge_reply` answers the judge prompt with a judgement in the exact output contract, its
  scores drawn from a hash of the dialogue (not of the sampling seed, so a parse retry of the same
  dialogue gets the same scores); completed sessions mostly pass the completion gate.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Mapping
from typing import Any

from pearl_verl.dims import DIMENSIONS
from pearl_verl.errors import InputError
from pearl_verl.judge.judge_contract import JudgeResult
from pearl_verl.judge.parser import parse_judgement
from pearl_verl.judge.prompt import canonical_output
from pearl_verl.judge.rubric import RUBRIC, Rubric
from pearl_verl.judge.scoring import result_from_samples

PLANNER_PREFIX = "You plan the next turn"
REALISER_PREFIX = "You are role-playing"
REFINE_PREFIX = "You edit"

# Labels whose wording the scripted realiser always satisfies (it always ends with a question).
SAFE_LABELS: tuple[str, ...] = (
    "uncertainty",
    "help_seeking",
    "feedback_uptake",
    "metacognitive_monitoring",
    "positive_engagement",
    "persistence",
)
_COMPLETED = re.compile(r'<session end_reason="(tutor_ended|student_concluded)"')
_INTENT = re.compile(r"^(?:- Attempt|Intent): (.+)$", re.M)


def _rng(*parts: object) -> random.Random:
    digest = hashlib.sha256("|".join(str(p) for p in parts).encode("utf-8")).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def _messages(body: Mapping[str, Any]) -> list[dict[str, str]]:
    return [dict(m) for m in body.get("messages") or []]


def student_reply(body: Mapping[str, Any]) -> str:
    """The healthy answer of a student endpoint to a planner, realiser or refine request.

    Raises:
        InputError: for a request that is none of the three roles (a drill wiring error).
    """
    messages = _messages(body)
    system = messages[0]["content"] if messages else ""
    rng = _rng("student", json.dumps(messages, sort_keys=True))
    if system.startswith(PLANNER_PREFIX):
        labels = rng.sample(SAFE_LABELS, rng.randint(0, 2))
        return json.dumps({"behaviours": labels, "leave": False})
    if system.startswith(REALISER_PREFIX):
        return message_for_intent(system, rng)
    if system.startswith(REFINE_PREFIX):
        return message_for_intent(messages[-1]["content"], rng)
    raise InputError(f"not a student planner/realiser/refine request: {system[:80]!r}")


def message_for_intent(prompt: str, rng: random.Random) -> str:
    """A student message that does what the prompt's ``Attempt:``/``Intent:`` line asks."""
    match = _INTENT.search(prompt)
    intent = match.group(1) if match else ""
    ask = rng.choice(("Is that right?", "Can you check it?", "Does that make sense?"))
    if value := _after(intent, "State the final answer ", "; it must"):
        return f"{rng.choice(('So the answer is', 'I got'))} {value}. {ask}"
    if value := _after(intent, "commit to the value ", ". Step"):
        return f"{rng.choice(('I think it is', 'Maybe it comes to'))} {value}. {ask}"
    if value := _after(intent, "and state its result ", ":"):
        return f"{rng.choice(('That gives', 'So that step is'))} {value}. {ask}"
    if intent.startswith("You are fed up"):
        return "This is too hard, I give up."
    if intent.startswith("You have solved"):
        return "Thanks, I get it now!"
    if intent.startswith("Set up this step"):
        return f"I know how to set this step up, but not what it gives. {ask}"
    return f"{rng.choice(('I am not sure what to do here.', 'Hmm, I am a bit lost.'))} Can you help me?"


def _after(text: str, start: str, end: str) -> str | None:
    if start not in text:
        return None
    rest = text.split(start, 1)[1]
    return rest.split(end, 1)[0].strip() if end in rest else None


def judge_reply(body: Mapping[str, Any], rubric: Rubric = RUBRIC) -> str:
    """The healthy judge endpoint's answer: a valid judgement of the request's dialogue."""
    messages = _messages(body)
    return judgement_for(messages[-1]["content"] if messages else "", rubric)


def judgement_for(user_message: str, rubric: Rubric = RUBRIC) -> str:
    """The judgement (JSON text in the output contract) the scripted judge gives a dialogue."""
    rng = _rng("judge", user_message)
    completed = bool(_COMPLETED.search(user_message))
    scores: dict[str, dict[str, tuple[int, str]]] = {}
    for dimension in DIMENSIONS:
        scores[dimension] = {}
        for criterion in rubric.for_dimension(dimension):
            if criterion is rubric.gate:
                raw = int(rng.random() < (0.9 if completed else 0.1))
            else:
                raw = rng.choice(criterion.scores)
            scores[dimension][criterion.key] = (raw, f"Turn {rng.randint(1, 9)} shows {criterion.key.replace('_', ' ')}.")
    return canonical_output(scores)


def expected_result(user_message: str, rubric: Rubric = RUBRIC) -> JudgeResult:
    """What an :class:`pearl_verl.judge.llm_judge.LLMJudge` must report for a healthy judgement."""
    return result_from_samples([parse_judgement(judgement_for(user_message, rubric), rubric)], rubric=rubric)

