"""Teaching moves a teacher reads in a tutor's turns, pooled over an evaluation's turns.

The held-out summary (:mod:`pearl_verl.train_local.heldout`) gives per-dialogue shares; this module answers the
questions a teacher asks of a pretrained tutor's turns, each as a share of the turns it applies to:

- ``states_answer``: of all tutor turns, those that state the final answer before the student has;
- ``refers``: of all tutor turns, those that use this problem's or the student's last message's quantities or words
  (a number of either, or a word of the problem that is not an everyday word): a stock line refers to nothing;
- ``asks_about_work``: of all tutor turns, questions about the student's work;
- ``points_after_wrong`` / ``points_after_right``: of the turns answering a wrong (right) attempt, those that point
  to a mistake; the first should be high, the second low;
- ``accepts_wrong``: of the turns answering a wrong attempt, praise that points to no mistake;
- ``well_formed``: of all tutor turns, complete sentences of words;
- ``not_stock``: of all tutor turns, those that are none of a fixed set of lines (the cold start's teacher turns):
  a tutor shrunk to stock lines scores near 0;
- ``solved``: of the dialogues, those in which the student reaches the answer.

The moves a turn makes count in well-formed turns only, as the held-out summary does: "check" inside letter soup is no
re-check prompt. ``well_formed``, ``not_stock`` and ``solved`` count every turn (or dialogue).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass

from pearl_verl.dialogue.answers import numbers_in
from pearl_verl.dialogue.episode import STUDENT, TUTOR, EpisodeRecord
from pearl_verl.dialogue.legible import context_words, well_formed
from pearl_verl.judge.features import DialogueFeatures, accepts_wrong, extract_features, points_to_mistake
from pearl_verl.train_local.heldout import asks_about_work

EVERYDAY_ZIPF = 5.0
"""wordfreq's Zipf scale: a word said at least ten times per million words ("number", "total", "check") is
everyday language, not this problem's."""
MOVES: dict[str, str] = {
    "states_answer": "tutor turns that state the final answer before the student has",
    "refers": "tutor turns that use this problem's or the student's quantities or words",
    "asks_about_work": "tutor turns that ask about the student's work",
    "points_after_wrong": "turns after a wrong attempt that point to the mistake",
    "points_after_right": "turns after a right attempt that point to a mistake",
    "accepts_wrong": "turns after a wrong attempt that praise it and point to no mistake",
    "well_formed": "tutor turns that are complete sentences of words",
    "not_stock": "tutor turns that are none of the cold start's teacher lines",
    "solved": "dialogues in which the student reaches the answer",
}
"""Each move and what it measures, in the order a report shows them."""

_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")


@dataclass(frozen=True)
class TurnMoves:
    """One tutor turn as :data:`MOVES` reads it.

    Attributes:
        after: the attempt of the student message it answers: ``correct``, ``partial``, ``incorrect`` or ``none``.
        well_formed, states_answer, refers, asks_about_work, points, accepts, stock: what the turn does (``accepts``:
            praise that points to no mistake, :func:`~pearl_verl.judge.features.accepts_wrong`).
    """

    after: str
    well_formed: bool
    states_answer: bool
    refers: bool
    asks_about_work: bool
    points: bool
    accepts: bool
    stock: bool


def refers(text: str, problem: str, student: str) -> bool:
    """Whether a tutor turn uses a number of the problem or of the student's last message, or a word of the problem
    that is not everyday language."""
    numbers = set(numbers_in(problem)) | set(numbers_in(student))
    if numbers & set(numbers_in(text)):
        return True
    return bool(_rare_words(text) & _rare_words(problem))


def _rare_words(text: str) -> set[str]:
    from wordfreq import zipf_frequency

    return {w for w in _WORD.findall(text.lower()) if len(w) > 3 and zipf_frequency(w, "en") < EVERYDAY_ZIPF}


def turn_moves(episode: EpisodeRecord, stock: Collection[str] = (), features: DialogueFeatures | None = None
               ) -> list[TurnMoves]:
    """Every tutor turn of ``episode`` (``stock``: the fixed lines, compared without case and spacing; ``features``:
    the episode's, when the caller has them)."""
    features = extract_features(episode) if features is None else features
    known = context_words([episode.problem.question, *(t.text for t in episode.turns if t.role != TUTOR)])
    attempts = iter(state.attempt for state in episode.student_trace)
    stock_keys = {_key(line) for line in stock}
    last_attempt, last_student, out = "none", "", []
    for i, turn in enumerate(episode.turns):
        if turn.role == STUDENT:
            last_attempt, last_student = next(attempts, "none"), turn.text
            continue
        ok = well_formed(turn.text, known)
        out.append(TurnMoves(
            after=last_attempt, well_formed=ok, states_answer=ok and i in features.leak_turns,
            refers=ok and refers(turn.text, episode.problem.question, last_student),
            asks_about_work=ok and asks_about_work(turn.text), points=ok and points_to_mistake(turn.text),
            accepts=ok and accepts_wrong(turn.text), stock=_key(turn.text) in stock_keys,
        ))
    return out


def move_rates(episodes: Iterable[EpisodeRecord], stock: Collection[str] = ()) -> dict[str, float | None]:
    """:data:`MOVES` over ``episodes``, each a share in [0, 1] of the turns (or dialogues) it applies to; None where
    none applies (no turn answered a wrong attempt, say)."""
    read = [(e, extract_features(e)) for e in episodes]
    turns = [t for e, features in read for t in turn_moves(e, stock, features)]
    after_wrong = [t for t in turns if t.after in ("incorrect", "partial")]
    after_right = [t for t in turns if t.after == "correct"]
    return {
        "states_answer": _share(turns, lambda t: t.states_answer),
        "refers": _share(turns, lambda t: t.refers),
        "asks_about_work": _share(turns, lambda t: t.asks_about_work),
        "points_after_wrong": _share(after_wrong, lambda t: t.points),
        "points_after_right": _share(after_right, lambda t: t.points),
        "accepts_wrong": _share(after_wrong, lambda t: t.accepts),
        "well_formed": _share(turns, lambda t: t.well_formed),
        "not_stock": _share(turns, lambda t: not t.stock),
        "solved": _share(read, lambda pair: pair[1].solved),
    }


def _share(items: list, test) -> float | None:
    return sum(map(test, items)) / len(items) if items else None


def _key(text: str) -> str:
    return " ".join(text.lower().split())
