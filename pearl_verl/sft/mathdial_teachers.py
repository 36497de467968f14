"""Cold-start dialogues from MathDial's human teachers (the paper's cold start, with people as the strong teacher).

In MathDial (Macina et al., 2023) teachers tutor a student who starts from a real wrong solution; the data folder
ships 599 of its conversations (``data/mathdial/test.jsonl``). A pretrained tutor that imitates them learns
problem-specific moves in a teacher's length: a median teacher turn is 17 SmolLM2 tokens, 95% fit in 48.

Each conversation becomes one row of verl's multi-turn SFT set in the view RL shows the policy
(:func:`pearl_verl.tutor.tutor_prompts.tutor_messages`): the tutor's system prompt for the problem, the simulated
student's opening (the problem and the conversation's real wrong solution, worded as the simulator words it), then
the teacher's turns as the assistant's and MathDial's student turns as the user's. What is left out, and why:

- conversations about a problem the run trains or evaluates on: the cold start teaches moves, not those answers;
- MathDial's move labels ("(focus)", "(probing)"): the tutor writes plain text;
- a conversation with a teacher turn over the RL turn cap: it would teach a length that RL cuts mid-sentence;
- teacher turns past the RL turn limit, and the student's messages after the last one kept.

The last kept teacher turn carries the end marker when the student's message before it states the right answer, so
that the tutor learns to close a solved session as the rubric asks.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pearl_verl.data.sources import READERS, SourceError
from pearl_verl.dialogue.episode import STUDENT, TUTOR, DialogueTurn
from pearl_verl.dialogue.problem import Problem
from pearl_verl.errors import InputError
from pearl_verl.tutor.scripted import student_stated_answer
from pearl_verl.tutor.tutor_prompts import END_MARKER, tutor_messages

HUMAN_POOL = "mathdial"
"""``cold_start_teachers`` value of this pool (beside the scripted pools of :mod:`pearl_verl.tutor.styles`)."""
MATHDIAL_CONVERSATIONS = Path("mathdial") / "test.jsonl"
"""The conversations, inside the data folder (:func:`pearl_verl.data.location.data_dir`)."""

_MOVE_LABEL = re.compile(r"^\((?:generic|focus|probing|telling)\)\s*", re.I)
_SPEAKER = re.compile(r"^\s*(Teacher|Student)\s*:\s*", re.I)

Opening = Callable[[Problem, str], str]
"""The simulated student's opening for a problem and its wrong solution."""


@dataclass(frozen=True)
class HumanDialogue:
    """One MathDial conversation, ready to become an SFT row.

    Attributes:
        problem: the problem, read as the ``mathdial`` source reads it.
        misconception: the student's real wrong solution, where the conversation starts.
        turns: the teacher's (``tutor``) and MathDial student's (``student``) messages in order, labels removed.
    """

    problem: Problem
    misconception: str
    turns: tuple[DialogueTurn, ...]


def parse_conversation(text: Any) -> tuple[DialogueTurn, ...]:
    """MathDial's ``conversation`` field (``Teacher: (focus)...|EOM|Student: ...``) as turns without move labels.

    Raises:
        ValueError: the field is no text, a message names no speaker, or one is empty.
    """
    if not isinstance(text, str):
        raise ValueError(f"conversation is {type(text).__name__}, not text")
    turns = []
    for raw in text.split("|EOM|"):
        if not raw.strip():
            continue
        speaker = _SPEAKER.match(raw)
        if speaker is None:
            raise ValueError(f"message {raw[:40]!r} names no speaker (Teacher: or Student:)")
        body = _MOVE_LABEL.sub("", raw[speaker.end():]).strip()
        if not body:
            raise ValueError(f"an empty {speaker.group(1)} message")
        turns.append(DialogueTurn(TUTOR if speaker.group(1).lower() == "teacher" else STUDENT, " ".join(body.split())))
    return tuple(turns)


def read_human_dialogues(path: Path) -> tuple[list[HumanDialogue], Counter[str]]:
    """Every usable conversation of a MathDial file, and per reason how many rows were not usable.

    Raises:
        InputError: the file cannot be read, or holds no usable conversation (with the reasons).
    """
    kept: list[HumanDialogue] = []
    dropped: Counter[str] = Counter()
    for line, row in _rows(path):
        try:
            item = READERS["mathdial"](row, str(path), line, "mathdial-teachers")
            turns = parse_conversation(row.get("conversation"))
        except (SourceError, ValueError):
            dropped["malformed"] += 1
            continue
        if item.misconception is None or not any(t.role == TUTOR for t in turns):
            dropped["no wrong solution or no teacher turn"] += 1
            continue
        kept.append(HumanDialogue(item.problem, item.misconception, turns))
    if not kept:
        raise InputError(f"{path} holds no usable MathDial conversation: {dict(dropped)}")
    return kept, dropped


def _rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise InputError(f"cannot read the MathDial conversations {path}: {exc}") from exc
    for line, text in enumerate(lines, 1):
        if text.strip():
            try:
                row = json.loads(text)
            except json.JSONDecodeError:
                row = None
            yield line, row if isinstance(row, dict) else {}


def sft_rows(dialogues: list[HumanDialogue], *, exclude_questions: Collection[str], opening: Opening,
             max_tutor_turns: int, max_turn_tokens: int, count_tokens: Callable[[str], int],
             limit: int) -> tuple[list[dict[str, Any]], Counter[str]]:
    """The first ``limit`` usable dialogues as rows of verl's multi-turn SFT set (``sft/dataset.py``'s columns), and
    per reason how many were left out (see the module docstring).

    Args:
        exclude_questions: the run's training and held-out problems (question text, compared without spacing).
        opening: the simulated student's first message for a problem and its wrong solution.
        max_tutor_turns: teacher turns kept per dialogue (RL's turn limit).
        max_turn_tokens: RL's per-turn token cap; a dialogue with a longer teacher turn is left out.
        count_tokens: the tutor model's token count of a message.
    """
    excluded = {_key(q) for q in exclude_questions}
    rows: list[dict[str, Any]] = []
    left_out: Counter[str] = Counter()
    for dialogue in dialogues:
        if len(rows) == limit:
            break
        turns = _kept_turns(dialogue.turns, max_tutor_turns)
        if _key(dialogue.problem.question) in excluded:
            left_out["a problem of the run"] += 1
        elif any(count_tokens(t.text) > max_turn_tokens for t in turns if t.role == TUTOR):
            left_out[f"a teacher turn over {max_turn_tokens} tokens"] += 1
        else:
            rows.append(_row(dialogue, turns, opening))
    return rows, left_out


def _kept_turns(turns: tuple[DialogueTurn, ...], max_tutor_turns: int) -> list[DialogueTurn]:
    """The turns up to the ``max_tutor_turns``-th teacher turn, without the student's messages after it."""
    kept: list[DialogueTurn] = []
    for turn in turns:
        if turn.role == TUTOR and sum(t.role == TUTOR for t in kept) == max_tutor_turns:
            break
        kept.append(turn)
    while kept and kept[-1].role == STUDENT:
        kept.pop()
    return kept


def _row(dialogue: HumanDialogue, turns: list[DialogueTurn], opening: Opening) -> dict[str, Any]:
    problem = dialogue.problem
    student_before_last = next((t.text for t in reversed(turns[:-1]) if t.role == STUDENT), "")
    solved = student_stated_answer(problem, student_before_last) is True
    if solved:
        turns = [*turns[:-1], DialogueTurn(TUTOR, f"{turns[-1].text} {END_MARKER}")]
    messages = tutor_messages(problem, [DialogueTurn(STUDENT, opening(problem, dialogue.misconception)), *turns])
    return {
        "id": f"mathdial-teacher-{problem.problem_id}",
        "messages": [dict(m) for m in messages],
        "data_source": "mathdial-teachers",
        "problem_id": problem.problem_id,
        "tutor_turns": sum(t.role == TUTOR for t in turns),
        "end_reason": "tutor_ended" if solved else "max_turns",
    }


def _key(question: str) -> str:
    return " ".join(question.split()).lower()
