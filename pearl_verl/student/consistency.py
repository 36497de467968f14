"""The cheap consistency check between a realised student message and its plan and state.

It runs on every message (no LLM call). Only a message that fails it is refined: by one LLM refine
call for the LLM backend (then re-checked), and, if that still fails or refining is off, replaced by
the template realisation of the same plan, which passes by construction. Checks:

- the message is non-empty, at most ``max_chars`` long, and stays in the student role: it does not
  speak as an assistant or the tutor (a ``Tutor:``/``Assistant:`` label, a speaker label on a later
  line, a chat-template token, the end-of-session marker, "I'm the AI assistant", "as an AI", "I'm here
  to help you", "Certainly!", "Great job! Now let's...", "Can you walk me through your solution?"),
  does not narrate the dialogue ("the student must...", "the tutor should...", "the user", "the
  request was cut off", "this conversation", "in character") and is not a formatted solution
  (markdown headings, a list of steps, bold, ``Solution:``). The phrases come from replies a weak
  served model wrote (``tests/student/fixtures/role_corpus.json``); each is first-person assistant or
  tutor talk or talk about the dialogue, not a word list, so MathDial's student turns pass (see
  ``docs/simulator.md``, *The role check*);
- it does not repeat its own instructions: no six words in a row from the realiser's or refiner's
  instructions, the behaviour definitions or this check's own findings, no label identifier
  (``help_seeking``), no prompt field name (``Intent:``, ``Problem:``), no line of the rendered
  profile and no talk of the planner's JSON format;
- a no-attempt turn states no answer ("the answer is 10", a boxed value) and works no calculation;
- it states the correct final answer exactly when the plan is a correct final attempt;
- an incorrect attempt states its planned wrong value; a correct step attempt states the step result;
- a help-seeking or answer-seeking intent contains a question mark.
"""

from __future__ import annotations

import re
from functools import lru_cache

from pearl_verl.dialogue.answers import last_boxed, numbers_in
from pearl_verl.dialogue.problem import Problem
from pearl_verl.student.planner import Plan, to_number
from pearl_verl.student.reading import ANSWER_IS, states_correct_answer
from pearl_verl.student.taxonomy import ATTEMPT_DEFINITIONS, BEHAVIOUR_DEFINITIONS, BEHAVIOURS
from pearl_verl.tutor.tutor_prompts import END_MARKER

_ROLE_BREAK = re.compile(
    r"^[\s*#>]*(tutor|teacher|assistant|user|human|ai|system|bot|chatbot)('s (note|comment|feedback))?\s*\**\s*:"
    r"|^\W*(assistant|tutor|ai) here\b|<\|[a-z_]+\|>|\[/?inst\]"  # a speaker label, a chat-template token
    r"|\bas an ai\b|\blanguage model\b|\bartificial intelligence\b|\b(here|happy|glad) to (help|assist)\b"
    r"|\bhow (can|could|may) i (help|assist)\b|\b(help|assist) you\b"
    # a speaker label after the first line: the model writes a script of the dialogue, not one message
    r"|\n\s*(student|tutor|teacher|assistant|me|user|human|ai|system)\s*:"
    r"|\b(edited|revised|corrected|rewritten|improved) (version|message)\b",  # the refine task talked about
    re.I,
)
# Who it says it is. A name or adjectives may stand between ("I'm Alex, the AI assistant"); "as the teacher" is
# left out, since students quote their teacher ("as the teacher said").
_ASSISTANT_IDENTITY = re.compile(
    r"\bi(?:'m| am) (?:just |only )?(?:[a-z]+, )?(?:an?|the|your) (?:[a-z]+ ){0,2}?(?:ai|assistant|chatbot|bot)\b"
    r"|\bi(?:'m| am) (?:the|your|an?) (?:math |ai |online |virtual )?(?:tutor|teacher)\b"
    r"|\bai (?:model|assistant|tutor)\b"
    r"|\bas (?:an? ai|an assistant|the assistant|your (?:ai |math )?(?:tutor|teacher|assistant)|an? tutor|the tutor)\b",
    re.I,
)
# An assistant serving a user: openers, offers, closings, refusals. Each names "you" as the one helped or the
# assistant's own output; a student asks for help ("Can you help me?") and says "Sure!" and "Thanks for asking".
_ASSISTANT_TALK = re.compile(
    r"^\W*certainly\b|^\W*(?:sure|absolutely|of course|okay|great)\W+i can (?:help|assist)"
    r"|\bi(?:'d| would) (?:love|like) to (?:help|assist)\b|^\W*in (?:summary|conclusion)\b"
    r"|\bhere(?:'s| is| are) (?:a|an|the) (?:(?:step-by-step|possible|sample|revised|corrected|detailed|simple|quick"
    r"|brief|short|complete|full) )?(?:solution|explanation|breakdown|response|reply|version|steps)\b"
    r"|\bhere(?:'s| is) how (?:you|to|we) (?:can )?solve\b|\bthe answer you asked for\b"
    # explaining the problem to "you"; a student explains their own working ("let me explain it again")
    r"|\b(?:i can|i'll|let me|i will) explain (?:this|it|that|the (?:problem|solution|steps))"
    r" (?:to you|in more detail|step by step)\b"
    r"|\b(?:great|excellent|good|interesting) question\b|\bthanks? (?:you )?for (?:your question|reaching out)\b"
    r"|\blet me know if (?:you|there)|\bfeel free to\b|\bhope (?:this|that|it) helps\b|\byou're welcome\b"
    r"|\banything else (?:i can|you need|you'd like)\b|\bwhat can i do for you\b|\bgood luck with\b"
    r"|\b(?:do you have|if you have) any (?:other |more |further )?questions\b"
    r"|\bwould you like me to (?:explain|help|walk|go over|clarify|break)\b"  # not "...show my work?"
    r"|\b(?:walk|guide|take) you through\b|\bi understand (?:that )?you(?:'re| are) (?:having trouble|struggling)"
    r"|\bi apologi[sz]e for (?:the|any) confusion\b"  # "I apologize, I made a mistake" is a MathDial student's
    r"|\bi (?:cannot|can't|am unable to|am not able to) (?:assist|provide|fulfill|comply|browse|access)\b"
    r"|\bi don't have access to\b|\bprovide (?:more|additional|further) (?:context|details|information)\b",
    re.I | re.M,
)
# The tutor's moves: praise opening a sentence ("I did a good job" is a student's), judging "your" answer, asking
# for "your" reasoning, steering and imperatives ("Try again?" echoed, and "What's the next step?", are a student's).
_TUTOR_TALK = re.compile(
    r"(?:^|[.!?]\s+)(?:(?:great|good|nice|excellent|awesome|fantastic|wonderful|perfect) "
    r"(?:job|work|thinking|effort|try|attempt|start)|well done)\b"
    r"|\bwhat an? (?:great|good|nice|excellent) (?:job|work|attempt|try|effort|start|question)\b"
    r"|\byour (?:answer|solution|reasoning|work|calculation) (?:is|was|looks) (?:correct|right|wrong|incorrect|good)\b"
    r"|\bkeep up the (?:good|great) work\b|\byou(?:'re| are) (?:doing (?:great|well|a great job)|on the right track)\b"
    r"|\blet's (?:recap|review what|break (?:it|this|the problem) down|work through)\b"
    r"|\blet's (?:solve|work on|go through|walk through|tackle|figure out|check|look at|review|verify) "
    r"(?:\w+ ){0,3}?together\b"  # "let's add them together" is arithmetic
    r"|\b(?:talk|walk) me through your\b|\bexplain your (?:reasoning|thinking|answer|steps|solution|work)\b"
    r"|\bshow me your (?:work|steps|reasoning)\b|\bwhat would you do next\b|\bwhat do you know so far\b"
    r"|\bwould you like to (?:try|give|attempt)\b|\bon your own\b|\bnow,? (?:can|could) you\b"
    r"|(?:^|[.!?]\s+)(?:try (?:again|\w+ing)\b(?![^.!?]*\?)|remember to\b|don't forget to\b)",
    re.I,
)
_SPEAKS_AS_ANOTHER = (_ROLE_BREAK, _ASSISTANT_IDENTITY, _ASSISTANT_TALK, _TUTOR_TALK)
# Talk about the dialogue rather than a turn in it. "The teacher" is left out: students quote their teacher,
# and word problems have teachers ("the teacher needs 36 pencils"), as "the student is awarded" is a problem's.
_NARRATION = re.compile(
    r"\bthe user\b|\bthe (?:student|tutor|assistant)(?:'s)?\s+(?:must|should|needs?|has to|have to|wants?|is asking"
    r"|asks?|asked|said|says|seems|appears|would|will|can|could|may|might|did|does|doesn't|didn't|has|hasn't"
    r"|forgot|tried|got|is (?:confused|stuck|struggling|trying|correct|wrong|right)|made|understands?|request"
    r"|question|message|reply|response|answer|attempt|turn|profile|intent|plan|mistake|confusion|reasoning|work"
    r"|understanding|next)\b"
    r"|\b(?:for|to|from|as|playing|play) the (?:student|tutor|assistant)\b(?!s\b|'s\b| council| body| union| manager)"
    r"|\b(?:your|the|this|my|original|previous) (?:request|prompt|query)\b|\b(?:this|the|our|previous) conversation\b"
    r"|\b(?:your|the|my|this|previous|last|original|next|student's) message\b"
    r"|\b(?:my|this|the|a possible|your|next) (?:response|reply)\b"
    r"|\b(?:request|message|prompt|question|text|input|sentence)\b[^.!?\n]{0,40}?\b(?:was|got|been|is|seems|appears)"
    r"(?: to be)? (?:cut off|truncated|incomplete)\b"
    r"|\brole[- ]?play|\bin character\b|\bplay(?:ing)? (?:the|a) (?:student|tutor|role)\b|\bmy role\b"
    r"|\b(?:pretend(?:ing)? to be|act(?:ing)? as|the role of) (?:the|a|an) (?:\w+ )?(?:student|tutor)\b"
    r"|\bas an? (?:\w+ )?student would\b",
    re.I,
)
# A written-up solution: a heading, bold, a Q:/A: pair, a field label, or (counted apart) two list items or steps
_FORMATTED = re.compile(
    r"^\s*#{1,6}\s+\S|\*\*[^*\n]+\*\*|(?:^|\s)q\s*:[^\n]*\s+a\s*:\s*\S"
    r"|^\s*(?:solution|explanation|response|reply|output|instruction|input|final answer)\s*:",
    re.I | re.M,
)
_LIST_ITEM = re.compile(r"^\s*(?:[-*\u2022+]\s|\d{1,2}[.)]\s|\**step \d+\**\s*[:.)])", re.I | re.M)
_PROMPT_FIELD = re.compile(
    r"^\s*(intent|behaviou?rs?|attempt|draft message|problems?|rules|plan|(student )?profile|your personality)\s*:"
    r"|\(\s*1\s*=\s*low|\b(activeness|perseverance|comprehension|expressiveness|attention) \([123]/3\)"
    r"|\bjson\b",  # the planner's reply format: a student talks about the problem, not about JSON
    re.I | re.M,
)  # the last lines: the profile block as the prompts render it; the planner's reply format
_WORKED = re.compile(r"\d\s*[-+*/×x÷]\s*\d+(?:\.\d+)?\s*=\s*\d")
_SHINGLE = 6
_STUDENT_PREFIX = re.compile(r"^\s*(student|me)\s*:\s*", re.I)


def clean_message(text: str) -> str:
    """Strip whitespace, wrapping quotes and a leading ``Student:`` label (formatting, not content)."""
    text = _STUDENT_PREFIX.sub("", text.strip())
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1].strip()
    return text


def states_value(text: str, value: str) -> bool:
    """Whether some number in ``text`` equals ``value`` (numerically)."""
    target = to_number(value)
    if target is None:
        return value in text
    return any(v is not None and abs(v - target) < 1e-6 for v in (to_number(n) for n in numbers_in(text)))


def check_message(text: str, plan: Plan, problem: Problem, max_chars: int) -> list[str]:
    """Problems found with ``text`` as the realisation of ``plan``; empty when it is consistent."""
    issues = role_issues(text, max_chars)
    if issues and issues[0] == EMPTY:
        return issues
    if plan.attempt == "none" and (claims_answer(text) or _WORKED.search(text)):
        issues.append("the student makes no attempt in this turn: no calculation and no answer")
    says_answer = states_correct_answer(problem, text)
    wants_answer = plan.attempt == "correct" and plan.final
    if wants_answer and not says_answer:
        issues.append(f"the student must state the final answer {problem.answer} as the last number")
    if says_answer and not wants_answer:
        issues.append("the student must not state the correct final answer in this turn")
    if plan.attempt == "incorrect" and plan.value is not None and not states_value(text, plan.value):
        issues.append(f"the student must commit to the wrong value {plan.value}")
    if plan.attempt == "correct" and not plan.final and plan.value is not None and not states_value(text, plan.value):
        issues.append(f"the student must state the step result {plan.value}")
    if {"help_seeking", "answer_seeking"} & set(plan.labels) and "?" not in text:
        issues.append("the student must ask the tutor a question")
    return issues


EMPTY = "the message is empty"
BREAKS_ROLE = (
    "the message breaks the student role "
    "(speaks as tutor/assistant, writes other speakers' lines or mentions being an AI)"
)
NARRATES = (
    "the message breaks the student role "
    "(talks about the student, the tutor, the user, the request or the conversation instead of speaking in it)"
)
FORMATTED = "the message breaks the student role (a formatted solution: headings, a list of steps, bold or labels)"


def role_issues(text: str, max_chars: int, finish_reason: str | None = None) -> list[str]:
    """The checks that hold for any simulated student's message, planned or not (the baselines too).

    A message cut at ``max_tokens`` (``finish_reason="length"``) is a fault, not a short reply: it
    can end mid-word, or in "(3" that a last-number reading takes for an answer.
    """
    if not text.strip():
        return [EMPTY]
    issues = []
    if finish_reason == "length":
        issues.append("the message was cut off at the token limit")
    if len(text) > max_chars:
        issues.append(f"the message is {len(text)} characters long; keep it under {max_chars}")
    if END_MARKER in text or any(pattern.search(text) for pattern in _SPEAKS_AS_ANOTHER):
        issues.append(BREAKS_ROLE)
    if _NARRATION.search(text):
        issues.append(NARRATES)
    if _FORMATTED.search(text) or len(_LIST_ITEM.findall(text)) >= 2:
        issues.append(FORMATTED)
    if repeats_instructions(text):
        issues.append("the message repeats its instructions instead of speaking as the student")
    return issues


def claims_answer(text: str) -> bool:
    """Whether the message commits to a final answer in words ("the answer is 10") or a box."""
    return bool(last_boxed(text)) or bool(ANSWER_IS.search(text))


def repeats_instructions(text: str) -> bool:
    """Whether ``text`` quotes the student prompts or this check (six words in a row), a label or a field name."""
    if _PROMPT_FIELD.search(text) or any(label in text for label in BEHAVIOURS if "_" in label):
        return True
    words = _words(text)
    return any(tuple(words[i : i + _SHINGLE]) in _instruction_shingles() for i in range(len(words) - _SHINGLE + 1))


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9']+", text.lower())


@lru_cache(maxsize=1)
def _instruction_shingles() -> frozenset[tuple[str, ...]]:
    from pearl_verl.student import student_prompts as prompts

    texts = [
        re.sub(r"\{[a-z_]+\}", " ", prompts.REALISER_INSTRUCTION),  # the template, without its slots
        prompts.REFINE_INSTRUCTION,
        prompts.PLANNER_INSTRUCTION,
        *BEHAVIOUR_DEFINITIONS.values(),
        *ATTEMPT_DEFINITIONS.values(),
        *_OWN_FINDINGS,
    ]
    shingles = set()
    for text in texts:
        words = _words(text)
        shingles.update(tuple(words[i : i + _SHINGLE]) for i in range(len(words) - _SHINGLE + 1))
    return frozenset(shingles)


_OWN_FINDINGS = (
    "the student must state the final answer as the last number",
    "the student must not state the correct final answer in this turn",
    "the student must commit to the wrong value",
    "the student must state the step result",
    "the student must ask the tutor a question",
    "the student makes no attempt in this turn: no calculation and no answer",
    BREAKS_ROLE,
    NARRATES,
    FORMATTED,
)
