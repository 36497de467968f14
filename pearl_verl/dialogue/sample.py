"""One training/evaluation sample as stored in a verl parquet row, and its parser.

A row's ``prompt`` is the student's opening message (the problem as the student first presents
it); ``extra_info["pearl"]`` holds the problem and the student's initial condition as a JSON string
(JSON rather than nested columns because Arrow unifies struct schemas across rows, which would
silently add null keys to conditions). verl repeats a row ``n`` times for a group; all members
parse the same condition, so every member starts from the same student.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pearl_verl.dialogue.problem import Problem
from pearl_verl.dialogue.student_contract import StudentCondition
from pearl_verl.errors import InputError

EXTRA_INFO_KEY = "pearl"


@dataclass(frozen=True)
class PearlSample:
    """The problem, the student's condition and the student's opening message."""

    problem: Problem
    condition: StudentCondition
    opening: str

    def to_extra_info(self) -> dict[str, str]:
        """The ``extra_info`` entry a prepared parquet row carries."""
        payload = {"problem": self.problem.to_dict(), "condition": self.condition.to_dict()}
        return {EXTRA_INFO_KEY: json.dumps(payload, sort_keys=True)}

    def to_prompt(self) -> list[dict[str, str]]:
        """verl's ``prompt`` column: the opening as a single user message."""
        return [{"role": "user", "content": self.opening}]

    @classmethod
    def from_row(cls, extra_info: Mapping[str, Any] | None, raw_prompt: Sequence[Mapping[str, Any]] | None) -> PearlSample:
        """Parse a dataset row's ``extra_info`` and ``raw_prompt`` (verl's chat messages).

        Raises:
            InputError: naming what is missing or malformed, and how such rows are produced.
        """
        where = "a dataset row"
        if not extra_info or EXTRA_INFO_KEY not in extra_info:
            raise InputError(
                f"{where} has no extra_info['{EXTRA_INFO_KEY}']: the pearl_tutor agent loop needs the problem and "
                "student condition there; prepare data with `pearl-verl prepare-data` (PearlSample.to_extra_info)."
            )
        payload = extra_info[EXTRA_INFO_KEY]
        try:
            payload = json.loads(payload) if isinstance(payload, str) else dict(payload)
            problem = Problem.from_dict(payload["problem"])
            condition = StudentCondition.from_dict(payload["condition"])
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise InputError(f"{where} has a malformed extra_info['{EXTRA_INFO_KEY}']: {exc}") from exc
        users = [m for m in (raw_prompt or []) if m.get("role") == "user"]
        if not users or not str(users[-1].get("content", "")).strip():
            raise InputError(f"{where} for problem {problem.problem_id!r} has no student message in its prompt.")
        return cls(problem=problem, condition=condition, opening=str(users[-1]["content"]))
