"""Tutor turns that are not teaching, put into real dialogues, to check that a judge rewards none of them.

A policy trained on a judge's reward finds whatever the judge pays for. A judge that reads cue words pays
for "Let's check that together?" inside letter soup; one that reads question marks pays for a bare "?". So
:func:`with_tutor_turns` keeps every student turn of a dialogue as it was and replaces every tutor turn
after the opening by one of :data:`KINDS`; a judge should score clean teaching (:data:`CLEAN`) clearly above
each of the others. ``bench/judge_fitted.py`` prints the table; the tests assert the ordering by a margin for
every CPU judge a recipe uses.
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable
from dataclasses import replace

from pearl_verl.dialogue.episode import STUDENT, TUTOR, EpisodeRecord
from pearl_verl.judge.features import extract_features

CLEAN = "clean_questions"
SOCRATIC_QUESTIONS = (
    "What is the problem asking you to find?",
    "Which numbers in the problem do you need for the first step?",
    "How could you check whether your answer makes sense?",
    "Can you explain how you got that number?",
    "What do you know so far, and what is still missing?",
    "Good effort. Which step would you like to look at again?",
)
"""Clean, generic Socratic questions: language and teaching moves, though not about this student's work."""
CUES = ("Let's check that together?", "Good job!", "What do you get?")


def _letters(rng: random.Random, words: int) -> str:
    return " ".join("".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(3, 9)))
                    for _ in range(words))


def _clean(episode: EpisodeRecord, i: int, rng: random.Random) -> str:
    return SOCRATIC_QUESTIONS[sum(t.role == TUTOR for t in episode.turns[:i]) % len(SOCRATIC_QUESTIONS)]


def _last_student(episode: EpisodeRecord, i: int) -> str:
    return next((t.text for t in reversed(episode.turns[:i]) if t.role == STUDENT), "")


KINDS: dict[str, Callable[[EpisodeRecord, int, random.Random], str]] = {
    CLEAN: _clean,
    "random_letters": lambda e, i, rng: _letters(rng, 8),
    "letters_around_cues": lambda e, i, rng: f"{_letters(rng, 4)} {rng.choice(CUES)} {_letters(rng, 4)}",
    "bare_question_mark": lambda e, i, rng: "?",
    "student_echoed": lambda e, i, rng: _last_student(e, i),
    "problem_pasted": lambda e, i, rng: e.problem.question,
    "answer_stated": lambda e, i, rng: f"The answer is {e.problem.answer}.",
    # a clean question said over and over until the turn's token cap cuts it
    "question_repeated": lambda e, i, rng: " ".join([_clean(e, i, rng)] * 3) + " How did",
    # praise and the first words of a question, then the turn ends: what a tiny tutor learned on a CPU judge
    "praise_then_stop": lambda e, i, rng: rng.choice(("Well done! What do you", "Good job! Can you", "Great! What is")),
    "lets_alone": lambda e, i, rng: "Let's",
}
"""Kind -> the tutor turn it writes at index i of a dialogue."""


PRAISE_OPENING = "Well done!"


def with_praise_openings(episode: EpisodeRecord, praise: str = PRAISE_OPENING) -> EpisodeRecord:
    """``episode`` with every tutor turn after the first student turn opening with ``praise``, students unchanged.

    Not junk: language, and praise after a right step is teaching. After a wrong attempt it accepts wrong work, and a
    tiny tutor trained on a CPU judge learned to open its turns so ("Well done! What is the numbers in order."); a
    judge must score it below the same turns without the praise wherever the student erred.
    """
    turns = []
    for i, turn in enumerate(episode.turns):
        if turn.role == TUTOR and any(t.role == STUDENT for t in episode.turns[:i]):
            turn = replace(turn, text=f"{praise} {turn.text}")
        turns.append(turn)
    return replace(episode, turns=tuple(turns))


def with_praise_after_wrong(episode: EpisodeRecord, praise: str = PRAISE_OPENING) -> EpisodeRecord:
    """``episode`` with the tutor turns that answer a wrong attempt opening with ``praise``: praise that accepts wrong
    work and nothing else, the move a judge must not pay however the rest of the dialogue scores."""
    wrong = set(extract_features(episode).wrong_turns)
    turns = tuple(replace(t, text=f"{praise} {t.text}") if t.role == TUTOR and i - 1 in wrong else t
                  for i, t in enumerate(episode.turns))
    return replace(episode, turns=turns)


def with_tutor_turns(episode: EpisodeRecord, kind: str, seed: int = 0) -> EpisodeRecord:
    """``episode`` with every tutor turn after the first student turn written by ``kind``, students unchanged.

    Raises:
        KeyError: an unknown kind.
    """
    make, rng = KINDS[kind], random.Random(seed)
    turns = []
    for i, turn in enumerate(episode.turns):
        if turn.role == TUTOR and any(t.role == STUDENT for t in episode.turns[:i]):
            turn = replace(turn, text=make(episode, i, rng))
        turns.append(turn)
    return replace(episode, turns=tuple(turns))


def teaching_dialogues(count: int = 16, seed: int = 0) -> list[EpisodeRecord]:
    """Dialogues of the coaching and Socratic scripted tutors with offline students of high ability, on the
    first ``count`` GSM8K test problems (the shipped ``data/``): the real teaching the junk replaces."""
    from pearl_verl.async_run import run_async
    from pearl_verl.data.problem_files import load_problem_files
    from pearl_verl.dialogue.episode_runner import EpisodeLimits
    from pearl_verl.student.factory import build_simulator
    from pearl_verl.student.simulation_runs import make_jobs, run_jobs
    from pearl_verl.student.student_config import StudentConfig
    from pearl_verl.tutor.scripted import ScriptedSocraticTutor
    from pearl_verl.tutor.styles import ScriptedCoachTutor

    jobs = make_jobs(load_problem_files(["gsm8k/test.jsonl"], count), "high", seed)
    out: list[EpisodeRecord] = []
    for tutor in (ScriptedCoachTutor(), ScriptedSocraticTutor()):
        simulator = build_simulator(StudentConfig(backend="offline"))
        out += run_async(run_jobs(simulator, tutor, jobs, EpisodeLimits(max_tutor_turns=8)))
    return out


def clean_with_wrong_attempts(episodes: list[EpisodeRecord]) -> list[EpisodeRecord]:
    """``episodes`` with clean tutor questions (:data:`CLEAN`), those where a tutor turn answers a wrong attempt: the
    dialogues on which :func:`with_praise_openings` accepts wrong work."""
    clean = (with_tutor_turns(e, CLEAN) for e in episodes)
    return [e for e in clean if extract_features(e).wrong_turns]
