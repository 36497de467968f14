"""Whether a message is language: English words, numbers and the signs of arithmetic, not letter soup.

A judge or a simulated student that reacts to cue words ("check", "good job", "?") wherever they sit can
be gamed by text that is not language: random letters around "Let's check that together?" earned more
reward from the heuristic judge than clean Socratic questions. Every reader that gives credit for what a
tutor says first asks this module whether the tutor said anything.

A token is a word when it is an English word that wordfreq (a frequency list built from many corpora,
shipped inside its wheel) counts at least :data:`MIN_ZIPF` (about once per million words) and, for one or two
letters, when it is one of the short words of :data:`SHORT_WORDS` (wordfreq counts fragments such as "ab",
"qe" or "ing" too often to trust for those); or when it occurs in the context the caller gives (the
problem's names and units, what the student wrote). Numbers, single letters (variables as often as words),
common LaTeX commands (``\\frac``, ``\\sqrt``) and the signs of arithmetic and punctuation are neutral: they
neither make nor break legibility. Anything else (letters that form no word, broken characters such as U+FFFD)
counts against it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass

MIN_ZIPF = 3.0
"""wordfreq's Zipf scale: 3.0 is once per million words. Random letter runs score 0; "cone" 3.8; "the" 7.7."""

LEGIBLE_SHARE = 0.9
"""A message is language when at least this share of its countable tokens are words (and it has one)."""

SHORT_WORDS = frozenset(
    "am an as at be by do go he hi if in is it me my no of oh ok on or so to up us we ye".split()
)
"""The words of two letters that count; other two-letter runs are fragments until shown otherwise."""

_TOKEN = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)*|\d+(?:[.,]\d+)*|\S", re.UNICODE)
_LATEX_NAMES = (
    "boxed frac dfrac tfrac cfrac sqrt cdot cdots dots ldots times div pm le leq ge geq ne neq approx equiv sim "
    "pmod gcd left right text textbf mathbf mathrm operatorname displaystyle quad qquad circ angle triangle "
    "overline underline parallel sin cos tan cot sec log ln arcsin arccos pi theta alpha beta lambda omega Delta "
    "infty sum prod int lim binom dbinom in cup cap to rightarrow Rightarrow implies lfloor rfloor lceil rceil prime"
)
_LATEX = re.compile(r"\\(?:begin|end)\{[a-z]+\*?\}|\\(?:" + "|".join(_LATEX_NAMES.split()) + r")(?![a-zA-Z])")
"""Common LaTeX commands and environments: notation, neutral like the signs of arithmetic. Only these names: a
backslash before letter soup (``\\xqzv``) leaves the soup to be counted."""
_NEUTRAL = frozenset("+-*/×÷=<>()[]{}.,;:!?'\"$%^&#@_|\\~`…–—“”‘’")


@functools.lru_cache(maxsize=65536)
def _english(word: str) -> bool:
    from wordfreq import zipf_frequency

    if len(word) <= 2:
        return word in SHORT_WORDS
    if "'" in word and zipf_frequency(word, "en") < MIN_ZIPF:
        return False
    return zipf_frequency(word, "en") >= MIN_ZIPF


_CLITICS = frozenset(("s", "t", "ll", "re", "ve", "d", "m"))


def _english_with_clitic(word: str) -> bool:
    """``students'``, ``Natalia's``, ``didn't``: a word and an English clitic."""
    stem, _, clitic = word.partition("'")
    return bool(stem) and "'" in word and clitic in _CLITICS | {""} and _english(stem)


@dataclass(frozen=True)
class Legibility:
    """How much of a message is language.

    Attributes:
        words: tokens that are words.
        other: tokens that count against legibility (letter runs that form no word, stray symbols).
    """

    words: int
    other: int

    @property
    def share(self) -> float:
        """Words over words and other tokens; 0.0 for a message with neither (a bare "?" or "42")."""
        total = self.words + self.other
        return self.words / total if total else 0.0

    @property
    def is_language(self) -> bool:
        return self.words > 0 and self.share >= LEGIBLE_SHARE


def context_words(texts: Iterable[str]) -> frozenset[str]:
    """The lower-cased letter tokens of ``texts`` (a problem's names and units, a student's words), and the stems
    of those with a clitic ("Quetzalli's" gives "quetzalli" too)."""
    tokens = {t.lower() for text in texts for t in _TOKEN.findall(text) if t[0].isalpha()}
    return frozenset(tokens | {t.partition("'")[0] for t in tokens})


def legibility(text: str, context: frozenset[str] = frozenset()) -> Legibility:
    """Count the words and the non-words of ``text``; ``context`` words always count as words."""
    words = other = 0
    for token in _TOKEN.findall(_LATEX.sub(" ", text)):
        if token[0].isdigit() or token in _NEUTRAL or (len(token) == 1 and token.isalpha()):
            continue  # a single letter is a variable (x, X, n) as often as a word
        if token[0].isalpha():
            lower = token.lower()
            if lower in context or _english(lower) or _english_with_clitic(lower):
                words += 1
                continue
        other += 1
    return Legibility(words, other)


def is_language(text: str, context: frozenset[str] = frozenset()) -> bool:
    """Whether ``text`` is language (:attr:`Legibility.is_language`)."""
    return legibility(text, context).is_language


SENTENCE_ENDS = (".", "!", "?", '."', '!"', '?"', ".)", "?)")


def well_formed(text: str, context: frozenset[str] = frozenset()) -> bool:
    """Whether ``text`` is a complete message of words: every letter run a word, no broken character, at least
    one word, and it ends a sentence (a message cut at a token cap ends mid-sentence, often mid-word).

    Stricter than :func:`is_language`, which lets one stray run in ten pass: this is what a tutor model's
    own output is held to (the share of well-formed turns is what train-local reports).
    """
    counted = legibility(text, context)
    return counted.words > 0 and counted.other == 0 and text.rstrip().endswith(SENTENCE_ENDS)


_QUESTION_WORDS = frozenset("what how why where who whom which when".split())
DANGLING = frozenset("a an the my your our their of to and or but nor because if than whose let let's lets".split()
                     ) | _QUESTION_WORDS
"""Words no English sentence ends on: articles, "my"/"your", "of"/"to", conjunctions, "let's", question words
(a question ends with "?", and "Do you know why" is rare in a tutor's turn)."""
_AUXILIARIES = frozenset("do does did can could would should will shall may might must is are was were have has had"
                         .split())
_SUBJECTS = frozenset("i you we they he she it".split())


def unfinished(text: str) -> bool:
    """Whether ``text`` stops where no sentence can end: "Well done! What do you", "Let's", "Look at the".

    Only a message without a sentence end is read, and only its last words: a word of :data:`DANGLING`, or a
    question left without its verb ("do you", "what is"). Teachers often leave out a final full stop ("Please
    recheck your work"): that is finished. Of MRBench V2's 1,655 responses by teachers and LLM tutors, this
    flags one, which its writer cut ("... depending on the retailer or"). A tutor model that learns to stop a
    turn after its first cue words ("Well done! What do you") wrote no question, however the judge reads cues.
    """
    stripped = text.rstrip()
    if stripped.endswith(SENTENCE_ENDS):
        return False
    words = [t.lower() for t in _TOKEN.findall(stripped.replace("\u2019", "'")) if t[0].isalnum()]
    if not words:
        return False
    last, before = words[-1], words[-2] if len(words) > 1 else ""
    return (last in DANGLING or (last in _SUBJECTS and before in _AUXILIARIES)
            or (last in _AUXILIARIES and before in _QUESTION_WORDS))


def is_message(text: str, context: frozenset[str] = frozenset()) -> bool:
    """Whether a reader takes ``text`` as a message at all: language (:func:`is_language`) that does not stop where
    no sentence can end (:func:`unfinished`). The CPU judges credit a tutor turn, and the simulated student moves on
    it, only when this holds, so what the judge pays for is what the student understands."""
    return is_language(text, context) and not unfinished(text)
