"""How often an LLM student's replies fell back to the rules, counted the same way in every command.

A student model too weak for the format (or a server that ignores structured output) does not
crash a run: the planner's labels fall back to the rule planner and the message to a template
(``StudentTurnState.plan_source`` / ``reply_source`` = ``fallback``). A run where that is most of
the replies is not an evaluation of the student model, so ``simulate``, ``eval-tutor``,
``gen-sft``, ``eval-simulator`` and ``train-local`` report these rates on screen and in their
summary file, and exit 1 above ``--max-fallback-rate``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from pearl_verl.llm.chat_types import JSON_MODES
from pearl_verl.ranges import SHARE

if TYPE_CHECKING:
    import argparse

MAX_FALLBACK_RATE = 0.5
"""The default ``--max-fallback-rate``: above it, most replies are the rules', not the model's."""
FALLBACK_RATE = SHARE
LABEL_SOURCES = ("llm", "fallback")
"""Label sources that mean the planner model was asked (``rules`` is the rule planner by design)."""
MESSAGE_SOURCES = ("llm", "refined", "fallback")
"""Message sources that mean the realiser model was asked (``template`` is the offline realiser)."""


@dataclass(frozen=True)
class FallbackRates:
    """Reply turns for which a student model was asked, and how many fell back to the rules.

    Attributes:
        label_turns: reply turns whose labels the planner model was asked for.
        label_fallbacks: of those, turns whose labels came from the rules after failed replies.
        message_turns: reply turns whose message the realiser model was asked for.
        message_fallbacks: of those, turns whose message is a template after failed replies.
    """

    label_turns: int = 0
    label_fallbacks: int = 0
    message_turns: int = 0
    message_fallbacks: int = 0

    @classmethod
    def of(cls, traces: Iterable[Iterable[Mapping[str, Any]]]) -> FallbackRates:
        """The rates of dialogues given as their student traces (``StudentTurnState.to_dict()`` each)."""
        counts = dict.fromkeys(("label_turns", "label_fallbacks", "message_turns", "message_fallbacks"), 0)
        for trace in traces:
            for state in trace:
                if not state.get("turn"):
                    continue  # the opening is written before any reply
                if state.get("plan_source") in LABEL_SOURCES:
                    counts["label_turns"] += 1
                    counts["label_fallbacks"] += state["plan_source"] == "fallback"
                if state.get("reply_source") in MESSAGE_SOURCES:
                    counts["message_turns"] += 1
                    counts["message_fallbacks"] += state["reply_source"] == "fallback"
        return cls(**counts)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FallbackRates:
        """The rates of a summary file's ``fallbacks`` (:meth:`to_dict`)."""
        return cls(**{name: int(data.get(name, 0)) for name in cls.__dataclass_fields__})

    @property
    def label_rate(self) -> float | None:
        return self.label_fallbacks / self.label_turns if self.label_turns else None

    @property
    def message_rate(self) -> float | None:
        return self.message_fallbacks / self.message_turns if self.message_turns else None

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "label_rate": self.label_rate, "message_rate": self.message_rate}

    def line(self) -> str | None:
        """One summary line, or None when no student model was asked (an offline student)."""
        if not (self.label_turns or self.message_turns):
            return None
        parts = []
        if self.label_turns:
            parts.append(f"labels {self.label_fallbacks}/{self.label_turns} ({100 * self.label_rate:.0f}%)")
        if self.message_turns:
            parts.append(f"messages {self.message_fallbacks}/{self.message_turns} ({100 * self.message_rate:.0f}%)")
        return "student replies that fell back to the rules: " + ", ".join(parts)

    def verdict(self, max_rate: float, flag: str = "--structured-output", mode: str | None = None) -> str | None:
        """The error line when either rate is above ``max_rate``; None otherwise.

        ``mode``: the structured output the student's server used, when known (it picks the advice).
        """
        worst = max((r for r in (self.label_rate, self.message_rate) if r is not None), default=0.0)
        return fallback_verdict(worst, max_rate, f"{flag} json_object", mode)


def fallback_verdict(rate: float, max_rate: float, remedy: str, mode: str | None = None) -> str | None:
    """The error line of every command when ``rate`` of the student replies fell back, above ``max_rate``.

    Args:
        rate: the share of replies that fell back.
        max_rate: ``--max-fallback-rate``.
        remedy: the setting to try first, as the command takes it (``--structured-output json_object``).
        mode: the structured output in use, when known: a server that already held the model to a
            JSON mode leaves only a stronger model to try.
    """
    if rate <= max_rate:
        return None
    head = (f"error: {100 * rate:.0f}% of the student replies fell back to the rules (above "
            f"--max-fallback-rate {max_rate:g}): the student model")
    if mode in JSON_MODES:
        return f"{head} does not follow the format even with {mode} structured output; use a stronger model"
    return f"{head} is not following the format; try {remedy} or a stronger model"


def add_fallback_flag(parser: argparse._ActionsContainer, role: str = "student") -> None:
    """``--max-fallback-rate``: the command exits 1 when more of the replies than this fell back."""
    parser.add_argument(
        "--max-fallback-rate", type=FALLBACK_RATE.flag, default=MAX_FALLBACK_RATE,
        help=f"exit 1 when more than this share of the {role} model's replies (labels or messages) fell back to the "
        "rules",
    )
