"""The offline realiser: template student messages from a plan (a deterministic CPU stand-in).

It writes u^t ~ pi_stu(. | q, h, m^t, c, z^t) without a model: each behaviour label contributes one
phrase (chosen by the session's seeded RNG), and the attempt contributes the step's own words, with
the planned right or wrong result, or only its set-up when partial. Phrases after the attempt never
contain digits, so a message's last number is the value the plan states. It is the offline backend's
stand-in for the LLM realiser and the last-resort fallback when an LLM message keeps failing the
consistency check; it is not the paper's realiser.
"""

from __future__ import annotations

import random
import re

from pearl_verl.dialogue.problem import Problem
from pearl_verl.dialogue.student_contract import StudentCondition
from pearl_verl.knowledge.decomposition import Decomposition
from pearl_verl.student.planner import Plan

PHRASES: dict[str, tuple[str, ...]] = {
    "off_topic": (
        "Sorry, I was thinking about my football practice.",
        "Do you like video games? I played a new one yesterday.",
        "Wait, what were we doing? I got distracted.",
        "My dog keeps barking, sorry.",
    ),
    "frustration": (
        "Ugh, this is so hard.",
        "I'm getting really frustrated.",
        "I always get these wrong.",
        "This is annoying.",
    ),
    "positive_engagement": (
        "Oh cool, this is kind of fun!",
        "Yay!",
        "I like this kind of problem.",
        "Nice, this makes sense!",
    ),
    "feedback_uptake": (
        "Okay, I'll use what you said.",
        "Oh, I see what you mean.",
        "Right, that helps.",
        "Okay, following your hint.",
    ),
    "self_correction": (
        "Wait, I think I made a mistake before.",
        "Oh, I got that wrong earlier.",
        "Hmm, let me fix what I said.",
    ),
    "persistence": ("Let me try again.", "Okay, one more try.", "I'll give it another go."),
    "uncertainty": (
        "I'm not sure.",
        "I'm kind of confused.",
        "Hmm, I don't really get this part.",
        "I'm not sure that's right.",
    ),
    "help_seeking": (
        "Can you give me a hint?",
        "Could you explain that step again?",
        "What does the question mean here?",
        "Do I add or multiply here?",
    ),
    "answer_seeking": (
        "Can you just tell me the answer?",
        "Can you do this one for me?",
        "Could you just show me how to do it?",
    ),
    "confused": (  # the whole message of a turn whose tutor message was not language
        "I don't understand what you mean. Can you help?",
        "Sorry, I don't get what you said. Can you say it another way?",
        "Huh? I don't understand that. Could you explain?",
        "I'm confused, what do you mean? Can you help me?",
    ),
    "leave": ("I don't want to do this anymore. Bye.", "This is too hard, I give up.", "I'm done, I can't do this."),
    "conclude": ("Thanks, I get it now!", "Okay, thank you for helping me!", "Thanks! That makes sense."),
}
META: dict[str, tuple[str, ...]] = {
    "correct": (
        "Let me double-check that... yes, I think that's right.",
        "I think I get this part now.",
        "That seems to make sense.",
    ),
    "partial": ("I think I know the idea but not the whole thing.", "I get the first part, but not how to finish."),
    "incorrect": ("I'm not sure if I did that right.", "I should probably check that."),
    "none": ("I don't think I understand what we're finding.", "I don't get which part to start with."),
}
REASONS: dict[str, str] = {
    "addition": "I need the total, so I add them",
    "subtraction": "some are taken away, so I subtract",
    "multiplication": "it's the same amount several times, so I multiply",
    "division": "it's split into equal parts, so I divide",
    "fractions": "it's part of the whole amount",
    "fraction_operations": "I take that fraction of the amount",
    "percent": "a percent means out of a hundred",
    "percent_change": "the change is a percent of the original amount",
    "rates": "it's the amount for each one, so I scale it",
    "unit_conversion": "the units have to match first",
    "money": "I keep track of what is spent and earned",
    "mean_average": "the average is the total divided by how many there are",
    "linear_equations": "I do the same thing to both sides",
}
OPENINGS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Hi! Can you help me with this problem? {q}", ("help_seeking",)),
    ("I'm working on this one: {q} I'm not sure how to start.", ("uncertainty",)),
    ("{q} I don't really get it. Can you help?", ("uncertainty", "help_seeking")),
    ("Here's my problem: {q}", ()),
)
_DIGIT = re.compile(r"\d")


def opening_text(problem: Problem, condition: StudentCondition) -> tuple[str, str, tuple[str, ...]]:
    """The opening message with its attempt outcome and labels; depends only on problem and condition."""
    rng = random.Random(f"opening|{problem.problem_id}|{condition.seed}|{condition.profile.total}")
    template, labels = OPENINGS[rng.randrange(len(OPENINGS))]
    text = template.format(q=problem.question.strip())
    if condition.misconception:
        text += f" I tried it and I think it goes like this: {condition.misconception.strip()}"
        return text, "incorrect", ("misconception",)
    return text, "none", labels


def _pick(rng: random.Random, key: str) -> str:
    options = PHRASES[key]
    return options[rng.randrange(len(options))]


def _short(text: str, limit: int = 220) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0]
    return cut.rstrip(",;:") + " ..."


_COMMON_FIRST = frozenset(
    "he she it they we i'm there then so the that this in on at after for if his her their its".split()
)


def _lower_first(text: str) -> str:
    """Lower-case a leading common word ("She makes" -> "she makes") but never a name."""
    first = text.split(" ", 1)[0]
    return text[:1].lower() + text[1:] if first.lower() in _COMMON_FIRST and first != "I" else text


def setup_of(step_text: str) -> str:
    """A step's set-up without its result: the text before its last ``=``, else its first half."""
    if "=" in step_text:
        return step_text.rsplit("=", 1)[0].strip().rstrip("$").strip()
    words = step_text.split()
    return " ".join(words[: max(1, len(words) // 2)])


def attempt_sentence(plan: Plan, problem: Problem, decomposition: Decomposition, rng: random.Random) -> str:
    """The mathematical part of the message (empty for no attempt)."""
    step = decomposition.steps[plan.step] if plan.step is not None else None
    guess = "guessing" in plan.labels
    if plan.attempt == "correct":
        if plan.final:
            if guess:
                return f"Is it {problem.answer}?"
            return f"{rng.choice(('So the answer is', 'I got', 'So it comes to'))} {problem.answer}."
        if step is None:
            return ""
        if guess and plan.value:
            return f"Is it {plan.value}?"
        lead = rng.choice(("I think", "So", "Okay, so", "Then"))
        return f"{lead} {_lower_first(_short(step.text))}"
    if plan.attempt == "partial" and step is not None:
        setup = _short(setup_of(step.text), 160)
        return rng.choice(
            (
                f"I think {_lower_first(setup)}, but I'm not sure what that gives.",
                f"So {_lower_first(setup)}... and then I don't know.",
            )
        )
    if plan.attempt == "incorrect":
        if plan.value is None:
            return "I think we just add all the numbers together."
        if guess:
            return f"Is it {plan.value}?"
        if plan.final:
            return f"I think the answer is {plan.value}."
        setup = setup_of(step.text) if step is not None and "=" in step.text else ""
        return f"I think {_lower_first(_short(setup, 160))} = {plan.value}." if setup else f"I got {plan.value}."
    return ""


def reason_phrase(plan: Plan, decomposition: Decomposition) -> str:
    """Why the step works, in words and without digits (keeps the stated value the last number)."""
    units = decomposition.steps[plan.step].units if plan.step is not None else ()
    for unit in units:
        if unit in REASONS:
            return f"I did it that way because {REASONS[unit]}."
    return "I did it that way because that's what the problem says happens next."


def realise(plan: Plan, problem: Problem, decomposition: Decomposition, rng: random.Random) -> str:
    """The student's message for ``plan`` (labels in a fixed order; the attempt's value last among numbers)."""
    labels = set(plan.labels)
    if plan.leave:
        return _pick(rng, "frustration") + " " + _pick(rng, "leave")
    if plan.confused:
        return _pick(rng, "confused")
    before = [_pick(rng, key) for key in ("off_topic", "frustration", "positive_engagement") if key in labels]
    if plan.conclude:
        meta = " I understand how to do this kind of problem now." if "metacognitive_monitoring" in labels else ""
        return " ".join([*before, _pick(rng, "conclude")]) + meta
    if "feedback_uptake" in labels:
        before.append(_pick(rng, "feedback_uptake"))
    if "self_correction" in labels:
        before.append(_pick(rng, "self_correction"))
    elif "persistence" in labels:
        before.append(_pick(rng, "persistence"))
    explain = reason_phrase(plan, decomposition) if "explaining_reasoning" in labels and plan.attempt != "none" else ""
    attempt = attempt_sentence(plan, problem, decomposition, rng)
    body = [explain, attempt] if plan.final or plan.attempt == "incorrect" else [attempt, explain]
    after = []
    if "metacognitive_monitoring" in labels:
        options = META[plan.attempt]
        after.append(options[rng.randrange(len(options))])
    for key in ("uncertainty", "help_seeking", "answer_seeking"):
        if key in labels:
            after.append(_pick(rng, key))
    text = " ".join(part for part in [*before, *body, *after] if part)
    return text or "I don't know."


def minimal_message(plan: Plan, problem: Problem) -> str:
    """The plainest message consistent with ``plan``: the last-resort fallback of the refine step."""
    if plan.leave:
        return "This is too hard, I give up."
    if plan.conclude:
        return "Thanks, I get it now!"
    if plan.confused:
        return "I don't understand what you mean. Can you help me?"
    if plan.attempt == "correct":
        core = (
            f"So the answer is {problem.answer}."
            if plan.final
            else (f"I got {plan.value}." if plan.value else "I did that step.")
        )
    elif plan.attempt == "incorrect":
        core = f"I got {plan.value}." if plan.value is not None else "I think we just add all the numbers together."
    elif plan.attempt == "partial":
        core = "I started that step but I'm not sure how to finish it."
    else:
        core = "I'm not sure."
    asks = {"help_seeking", "answer_seeking"} & set(plan.labels)
    return f"{core} Can you give me a hint?" if asks else core
