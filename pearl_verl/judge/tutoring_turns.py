"""Which tutor turns are turns of tutoring, for the CPU judges: no credit for text that is not teaching.

A tutor turn is no turn of tutoring when it is not language (:mod:`pearl_verl.dialogue.legible`: letter soup,
cue words inside junk, a bare "?"), when it stops where no sentence can end
(:func:`pearl_verl.dialogue.legible.unfinished`: a tiny tutor learned to stop after "Well done! What do you"), when it
copies the student's last turn or the problem statement (at
least :data:`COPY_SHARE` of its word pairs), or when it repeats itself (a sentence twice in one turn: a tiny tutor
trained on the fitted judge learned to say "How did you get that together." over and over until its token cap,
each copy one more question for the judge's n-grams). Both CPU judges (:mod:`pearl_verl.judge.offline`,
:mod:`pearl_verl.judge.fitted.judge`) then:

- read the criteria that give credit on the dialogue with such turns blank (:func:`blanked`), so a cue word
  inside junk is no re-check prompt, no praise and no question;
- scale every criterion but the gate by the share of the judged tutor turns that are tutoring
  (:attr:`TutoringTurns.share`): "concise", "no leak" and "no blame" are no credit for a turn that said
  nothing, and a dialogue whose tutor wrote only junk scores 0 however well its student did alone;
- read what a junk turn can do wrong on the turns as written (:data:`AS_WRITTEN`): a leaked answer, key
  steps or an over-specific hint inside junk, a wrong ``a op b = c``, and the completion gate, count.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from pearl_verl.dialogue.episode import STUDENT, TUTOR, EpisodeRecord
from pearl_verl.dialogue.legible import context_words, is_message

COPY_SHARE = 0.7
"""A turn whose word pairs are at least this share copied from the student's last turn or the problem is a copy."""

AS_WRITTEN = frozenset({"complete.session_complete", "leak.final_answer", "leak.key_steps", "leak.hint_specificity",
                        "acc.statements_correct"})
"""Criteria read on the turns as written: what a junk turn does wrong still counts against it."""

_WORDS = re.compile(r"[a-z]+(?:'[a-z]+)?|\d+(?:\.\d+)?", re.I)


def _pairs(text: str) -> set[tuple[str, str]]:
    words = [w.lower() for w in _WORDS.findall(text)]
    return set(zip(words, words[1:]))


def copies(text: str, source: str) -> bool:
    """Whether ``text`` is mostly ``source`` repeated (:data:`COPY_SHARE` of its word pairs; two words at least)."""
    own = _pairs(text)
    return bool(own) and len(own & _pairs(source)) / len(own) >= COPY_SHARE


_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def repeats_itself(text: str) -> bool:
    """Whether one sentence of ``text`` occurs twice in it (compared by its words, case aside)."""
    seen = set()
    for sentence in _SENTENCE.split(text):
        words = tuple(w.lower() for w in _WORDS.findall(sentence))
        if words in seen:
            return True
        if words:
            seen.add(words)
    return False


@dataclass(frozen=True)
class TutoringTurns:
    """The judged tutor turns of a dialogue, and those that are no turn of tutoring.

    Attributes:
        judged: indices of the judged tutor turns (from ``judged_from`` on).
        invalid: those that are not language, stop unfinished, copy the student's last turn or the problem, or
            repeat themselves.
    """

    judged: tuple[int, ...]
    invalid: tuple[int, ...]

    @property
    def share(self) -> float:
        """The share of judged tutor turns that are tutoring; 1.0 when no tutor turn is judged."""
        return 1 - len(self.invalid) / len(self.judged) if self.judged else 1.0

    def note(self) -> str:
        """What a rationale says of the scaling ("" when every judged turn is tutoring)."""
        if not self.invalid:
            return ""
        return (f"; credit x {self.share:.2f}: tutor turn(s) {list(self.invalid)} of {len(self.judged)} are no "
                "tutoring (not language, unfinished, a copy, or repeating itself)")


def tutoring_turns(episode: EpisodeRecord, judged_from: int = 0) -> TutoringTurns:
    """Classify the judged tutor turns of ``episode`` (see the module docstring)."""
    problem = episode.problem
    # the words the student simulator reads as words too (student/reading.py): what a tutor quotes from the problem,
    # its worked solution or the student is language
    known = context_words([problem.question, problem.reference_solution,
                           *(t.text for t in episode.turns if t.role == STUDENT)])
    judged, invalid, last_student = [], [], ""
    for i, turn in enumerate(episode.turns):
        if turn.role == STUDENT:
            last_student = turn.text
        elif turn.role == TUTOR and i >= judged_from:
            judged.append(i)
            text = turn.text
            if (not is_message(text, known) or copies(text, last_student) or copies(text, problem.question)
                    or repeats_itself(text)):
                invalid.append(i)
    return TutoringTurns(tuple(judged), tuple(invalid))


def blanked(episode: EpisodeRecord, turns: TutoringTurns) -> EpisodeRecord:
    """``episode`` with the text of every turn that is no tutoring removed (the same record when there is none)."""
    if not turns.invalid:
        return episode
    invalid = set(turns.invalid)
    return replace(episode, turns=tuple(replace(t, text="") if i in invalid else t
                                        for i, t in enumerate(episode.turns)))
