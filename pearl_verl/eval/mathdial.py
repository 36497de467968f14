"""MathDial's interactive metrics: success@k and telling@k (Macina et al., 2023; data CC BY-SA 4.0).

A dialogue is a sequence of teacher and student utterances. With ``s`` the 0-based index, among the
student's utterances, of the first one that states the final answer, and ``t`` the same for the
teacher's (infinite when never):

- success@k: ``s <= k`` (the student reached the answer within k rounds);
- telling@k: ``t <= min(s, k)`` (the teacher stated the answer first, within k rounds).

MathDial's own harness opens every dialogue with a fixed teacher prompt ("walk me through your
solution") at teacher index 0, answered by the student's wrong solution at student index 0. Our
episodes open with the student presenting the problem and their work, so tutor turn ``j`` (0-based)
is teacher index ``j + 1``: the rounds line up with the harness. An utterance "states the answer" when
any number in it equals the final answer (math-verify equality, as :func:`pearl_verl.dialogue.answers.mentions_answer`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pearl_verl.dialogue.answers import mentions_answer, numbers_in
from pearl_verl.dialogue.episode import STUDENT, TUTOR, EpisodeRecord
from pearl_verl.errors import InputError
from pearl_verl.stats import Estimate, wilson_ci

_MOVE = re.compile(r"^\((?:focus|probing|generic|telling)\)\s*", re.IGNORECASE)


@dataclass(frozen=True)
class Indices:
    """First-answer indices of one dialogue (``math.inf`` when never)."""

    student: float
    teacher: float

    def success_at(self, k: int) -> bool:
        return self.student <= k

    def telling_at(self, k: int) -> bool:
        return self.teacher <= min(self.student, k)


def _first(utterances: Sequence[str], answer: str, offset: int = 0) -> float:
    for index, text in enumerate(utterances):
        if mentions_answer(text, answer):
            return index + offset
    return math.inf


def episode_indices(episode: EpisodeRecord) -> Indices:
    """The indices of one of our episodes (tutor turn j is teacher index j + 1)."""
    students = [t.text for t in episode.turns if t.role == STUDENT]
    tutors = [t.text for t in episode.turns if t.role == TUTOR]
    return Indices(_first(students, episode.problem.answer), _first(tutors, episode.problem.answer, offset=1))


def human_indices(row: Mapping[str, Any]) -> Indices | None:
    """The indices of one MathDial dataset conversation (its human teacher); None without a final number."""
    final = str(row["ground_truth"]).strip().splitlines()[-1]
    numbers = numbers_in(final)
    if not numbers:
        return None
    teachers, students = [], []
    for utterance in str(row["conversation"]).split("|EOM|"):
        speaker, _, text = utterance.strip().partition(":")
        if speaker.strip() == "Teacher":
            teachers.append(_MOVE.sub("", text.strip()))
        elif speaker.strip() == "Student":
            students.append(text.strip())
    return Indices(_first(students, numbers[-1]), _first(teachers, numbers[-1]))


def curves(indices: Sequence[Indices], max_k: int) -> dict[str, list[Estimate]]:
    """success@k and telling@k for k = 1..max_k (proportions with Wilson intervals)."""
    if not indices:
        raise InputError("success@k / telling@k need at least one dialogue.")
    if max_k < 1:
        raise InputError(f"max_k={max_k} must be >= 1.")
    n = len(indices)
    return {
        "success": [wilson_ci(sum(i.success_at(k) for i in indices), n) for k in range(1, max_k + 1)],
        "telling": [wilson_ci(sum(i.telling_at(k) for i in indices), n) for k in range(1, max_k + 1)],
    }


def mathdial_markdown(rows: Mapping[str, Mapping[str, list[Estimate]]], max_k: int) -> str:
    """One table for success@k and one for telling@k (percent), a row per tutor."""
    ks = list(range(1, max_k + 1))
    lines = ["# MathDial success@k / telling@k", ""]
    lines += [
        (
            "success@k: the student states the final answer within k rounds (higher is better); telling@k: the "
            "teacher states it first, within k rounds (lower is better). Percent over dialogues."
        ),
        "",
    ]
    for metric in ("success", "telling"):
        lines += [f"## {metric}@k", "", "| Tutor | n | " + " | ".join(f"@{k}" for k in ks) + " |"]
        lines += ["|" + "|".join(["---"] * (len(ks) + 2)) + "|"]
        for name, data in rows.items():
            lines.append(
                f"| {name} | {data[metric][0].n} | " + " | ".join(f"{100 * e.mean:.1f}" for e in data[metric]) + " |"
            )
        lines.append("")
    return "\n".join(lines)
