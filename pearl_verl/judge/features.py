"""Observable features of a tutoring dialogue, for the offline heuristic judge.

Everything here is computed from the text and the student state trace alone: numbers are
compared with math-verify (:mod:`pearl_verl.dialogue.answers`), never as strings. The features are crude
proxies of the rubric criteria; they exist so that tests and CPU runs have a deterministic judge,
not to replace the LLM judge.

``judged_from`` judges only the tutor turns from that index on (one candidate next turn, for
comparison with human labels on single responses: :mod:`pearl_verl.judge.one_turn`). Earlier turns
are context: the student's attempts in them still count (a direct answer after three attempts is not
a leak), numbers said in them are known, and a key result already said in them is not the candidate's
to supply; but earlier tutor turns are not scored, so a tutor turn written by someone else cannot
raise or lower the candidate's question ratio, tone or length.

A problem whose answer is :data:`~pearl_verl.judge.judge_contract.NOT_GIVEN` has no reference answer (a
human-labelled conversation whose source gives none): then no tutor turn states it (no leak is
invented) and no student turn reaches it; a number a student states is still read as a wrong attempt
when it is no key result of the (then empty) reference solution, the rule for dialogues without a
state trace.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from pearl_verl.dialogue.answers import answers_match, mentions_answer, numbers_in
from pearl_verl.dialogue.episode import STUDENT, TUTOR, EpisodeRecord
from pearl_verl.errors import InputError
from pearl_verl.judge.judge_contract import NOT_GIVEN

SUFFICIENT_ATTEMPTS = 3
"""Genuine student attempts after which a direct explanation is no longer leakage (paper: "after
the student has made sufficient attempts")."""

_STUCK = re.compile(r"\b(don'?t know|not sure|confus\w*|stuck|no idea|lost|don'?t get|give up)\b", re.IGNORECASE)
_ASKS_FOR_ANSWER = re.compile(
    r"\b(just tell me|tell me the answer|what'?s the answer|what is the answer|show me how|explain (it|this|how)"
    r"|can you (explain|show))\b",
    re.IGNORECASE,
)
_PRAISE = re.compile(
    r"\b(correct|right|exactly|well done|perfect|excellent|great( (job|work|thinking))?(?! (effort|try|question))"
    r"|good (job|work|thinking)|nice (job|work)|that'?s it)\b",
    re.IGNORECASE,
)
_NEGATED_PRAISE = re.compile(r"\b(not (quite )?(correct|right)|isn'?t (quite )?(correct|right))\b", re.IGNORECASE)
_CHECK = re.compile(
    r"\b(check|how did you get|look again|re-?examine|are you sure|try (that|it) again|once more)\b", re.IGNORECASE
)
_POINTS_TO_MISTAKE = re.compile(r"\b(mistake|not quite|incorrect|error|wrong)\b", re.IGNORECASE)
_EXPLAIN = re.compile(r"\b(explain|why|how did you|check|verify|make sense|walk me through)\b", re.IGNORECASE)
_REFLECT = re.compile(
    r"\b(recap|summar\w*|key idea|remember|what did you learn|the method|approach|strategy)\b", re.IGNORECASE
)
_ENCOURAGE = re.compile(
    r"\b(good|great|well done|nice|excellent|that'?s okay|don'?t worry|let'?s|together|you can|keep going)\b",
    re.IGNORECASE,
)
_BLAME = re.compile(r"\b(wrong|careless|obviously|silly|lazy|should have known|no excuse)\b", re.IGNORECASE)
_BINARY_EQUATION = re.compile(
    r"(?<![\w.])(-?\d+(?:\.\d+)?)\s*([+\-*/×x÷])\s*(-?\d+(?:\.\d+)?)\s*=\s*\$?\s*(-?\d[\d,]*(?:\.\d+)?)(?!\.?\d)"
)
_OPERATION = re.compile(r"(?<![\w.])\d+(?:\.\d+)?\s*[+\-*/×x÷]\s*\d+(?:\.\d+)?")
_RESULT = re.compile(r"=\s*\$?\s*(-?\d[\d,]*(?:\.\d+)?)")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
T = TypeVar("T")


@dataclass(frozen=True)
class DialogueFeatures:
    """What the heuristic judge sees of one dialogue (turn indices index ``episode.turns``).

    Counts and ratios over tutor turns cover the judged tutor turns only (every tutor turn unless
    :func:`extract_features` was given ``judged_from``); so do reactions to wrong attempts and confusion.

    Attributes:
        solved_at: index of the first student turn with the correct final answer; None if never.
        leak_turns: tutor turns that state the final answer before ``solved_at`` without an excuse
            (sufficient attempts, or an explicit request for an explanation).
        excused_turns: tutor turns that state it before ``solved_at`` with such an excuse.
        early_leak: a leak turn came before the student's first genuine attempt.
        key_results: intermediate results of the reference solution (not in the question).
        tutor_supplied: key results first stated by the tutor before ``solved_at``.
        student_supplied: key results (and the answer) first stated by the student.
        specific_hint_turns: tutor turns before ``solved_at`` that hand over an operation with its operands.
        arithmetic_errors: wrong ``a op b = c`` statements by the tutor.
        wrong_attempts: student turns with an incorrect or partial attempt before ``solved_at``.
        wrong_turns: their indices, for those a judged tutor turn answers.
        accepting_turns: the tutor turns that answered a wrong attempt with praise that points to no mistake
            (:func:`accepts_wrong`); :attr:`praised_wrong` counts them.
        judged_from: the first judged turn (0: the whole dialogue).
        checked_wrong: wrong attempts the tutor answered by asking the student to re-check.
        blamed_wrong: wrong attempts the tutor answered with blaming words.
        stuck_turns: student turns signalling confusion that the tutor answered.
        adapted_after_stuck: stuck turns after which the tutor changed its message.
        repeated_tutor_turns: tutor turns nearly identical to the tutor's previous one.
        question_ratio: share of tutor turns that ask a question.
        explain_prompts: tutor turns asking to explain or verify.
        reflection: the tutor summarises or asks for reflection after the solution.
        encourage_ratio: share of tutor turns with encouraging words.
        blame_turns: tutor turns with blaming words.
        mean_words / max_words / mean_sentence_words: tutor message lengths.
        irrelevant_numbers: numbers the tutor mentions that appear nowhere else in the task or dialogue.
        tutor_turns: number of tutor turns.
    """

    solved_at: int | None
    leak_turns: tuple[int, ...]
    early_leak: bool
    key_results: tuple[str, ...]
    tutor_supplied: tuple[str, ...]
    student_supplied: tuple[str, ...]
    specific_hint_turns: int
    arithmetic_errors: int
    wrong_attempts: int
    checked_wrong: int
    blamed_wrong: int
    stuck_turns: int
    adapted_after_stuck: int
    repeated_tutor_turns: int
    question_ratio: float
    explain_prompts: int
    reflection: bool
    encourage_ratio: float
    blame_turns: int
    mean_words: float
    max_words: int
    mean_sentence_words: float
    irrelevant_numbers: int
    tutor_turns: int
    excused_turns: tuple[int, ...] = ()
    wrong_turns: tuple[int, ...] = ()
    accepting_turns: tuple[int, ...] = ()
    judged_from: int = 0

    @property
    def praised_wrong(self) -> int:
        """Wrong attempts the tutor accepted with praise (one per turn of :attr:`accepting_turns`)."""
        return len(self.accepting_turns)

    @property
    def solved(self) -> bool:
        return self.solved_at is not None


def asks_to_recheck(text: str) -> bool:
    """Whether a tutor message sends the student back to re-check (the cue of ``checked_wrong``)."""
    return bool(_CHECK.search(text))


def praises(text: str) -> bool:
    """Whether a tutor message confirms or praises (and does not negate it: "not quite right")."""
    return bool(_PRAISE.search(text)) and not _NEGATED_PRAISE.search(text)


def points_to_mistake(text: str) -> bool:
    """Whether a tutor message points to a mistake: it sends the student back to re-check or names one."""
    return asks_to_recheck(text) or bool(_POINTS_TO_MISTAKE.search(text))


def accepts_wrong(reply: str) -> bool:
    """Whether a tutor's reply to a wrong attempt accepts it: it praises or confirms ("Well done!", "Good thinking!")
    and neither sends the student back to re-check nor names a mistake.

    The rubric's lowest level of ``acc.feedback_correct`` ("the tutor accepts a wrong step or answer ... and this
    stands"); MRBench's teachers label praise with a pointer ("Great effort, but let's double-check that
    subtraction") as identifying the mistake in most cases, praise alone as not identifying it. "Good effort" and
    "nice try" acknowledge work without a verdict and are no praise here.
    """
    return praises(reply) and not points_to_mistake(reply)


def key_results(question: str, solution: str, answer: str) -> tuple[str, ...]:
    """Computed results in the reference solution (after ``=``), minus the answer and given numbers."""
    given = set(numbers_in(question))
    out: list[str] = []
    for match in _RESULT.finditer(solution):
        value = match.group(1).replace(",", "")
        if value in given or value in out or answers_match(answer, value):
            continue
        out.append(value)
    return tuple(out)


def _states(episode: EpisodeRecord) -> dict[int, object]:
    """Trace state per student turn index (the i-th student turn gets the i-th state)."""
    student_indices = [i for i, t in enumerate(episode.turns) if t.role == STUDENT]
    return dict(zip(student_indices, episode.student_trace, strict=False))


def reference_answer(episode: EpisodeRecord) -> str | None:
    """The problem's final answer; None when it has none (:data:`~pearl_verl.judge.judge_contract.NOT_GIVEN`)."""
    answer = episode.problem.answer
    return None if answer == NOT_GIVEN else answer


def _states_answer(text: str, answer: str) -> bool:
    numbers = numbers_in(text)
    return bool(numbers) and answers_match(answer, numbers[-1])


def _states_final_answer(text: str, answer: str) -> bool:
    """Whether the tutor's message states the final answer: a number equal to it, other than an operand
    of an operation it sets up ("10 x 2 = ?" asks for a product, it does not state 2; "12 - 2 = 10" states 10)."""
    return mentions_answer(_OPERATION.sub(" ", text), answer)


def _similar(a: str, b: str) -> bool:
    wa, wb = set(a.lower().split()), set(b.lower().split())
    return bool(wa or wb) and len(wa & wb) / len(wa | wb) >= 0.8


def arithmetic_errors(text: str) -> int:
    """How many ``a op b = c`` statements in ``text`` are wrong."""
    errors = 0
    for a, op, b, c in _BINARY_EQUATION.findall(text):
        x, y, claimed = float(a), float(b), float(c.replace(",", ""))
        if op in "/÷" and y == 0:
            continue
        value = {
            "+": x + y,
            "-": x - y,
            "*": x * y,
            "×": x * y,
            "x": x * y,
            "/": x / y if y else 0.0,
            "÷": x / y if y else 0.0,
        }[op]
        errors += abs(value - claimed) > 1e-6 * max(1.0, abs(value))
    return errors


@dataclass
class _Scan:
    """Counters of one left-to-right pass over a dialogue (see :class:`DialogueFeatures`)."""

    episode: EpisodeRecord
    end: int  # index of the solving student turn, or len(turns)
    keys: tuple[str, ...]
    judged_from: int = 0  # tutor turns before it are context, not judged
    states: dict[int, object] = field(default_factory=dict)
    leak_turns: list[int] = field(default_factory=list)
    excused_turns: list[int] = field(default_factory=list)
    early_leak: bool = False
    attempts: int = 0
    wrong: int = 0
    wrong_turns: list[int] = field(default_factory=list)
    accepting: list[int] = field(default_factory=list)
    checked: int = 0
    blamed: int = 0
    stuck: int = 0
    adapted: int = 0
    repeated: int = 0
    specific: int = 0
    last_tutor: str = ""

    def student(self, i: int) -> None:
        turns, answer = self.episode.turns, reference_answer(self.episode)
        text, attempt = turns[i].text, getattr(self.states.get(i), "attempt", None)
        numbers = numbers_in(text)
        if attempt:
            self.attempts += attempt in ("correct", "partial", "incorrect")
            is_wrong = i < self.end and attempt in ("partial", "incorrect")
        else:  # no trace: a stated number that is neither the answer nor a key intermediate result
            self.attempts += bool(numbers)
            is_wrong = (
                i < self.end
                and bool(numbers)
                and not any(answers_match(v, numbers[-1]) for v in (*([answer] if answer else []), *self.keys))
            )
        reply = turns[i + 1].text if i + 1 < len(turns) else None
        if reply is None:  # the dialogue ended on this turn: nothing the tutor could react to
            return
        if i + 1 < self.judged_from:  # answered by a context turn: an attempt, but no reaction to judge
            return
        stuck_now = bool(_STUCK.search(text))
        self.stuck += stuck_now
        if is_wrong:
            self.wrong += 1
            self.wrong_turns.append(i)
            if accepts_wrong(reply):
                self.accepting.append(i + 1)
            self.checked += bool(_CHECK.search(reply))
            self.blamed += bool(_BLAME.search(reply))
        if stuck_now and not _similar(reply, self.last_tutor):
            self.adapted += 1

    def tutor(self, i: int, answer_given: bool) -> None:
        text, answer = self.episode.turns[i].text, reference_answer(self.episode)
        judged = i >= self.judged_from
        if judged and self.last_tutor and _similar(text, self.last_tutor):
            self.repeated += 1
        self.last_tutor = text
        if i >= self.end or not judged:
            return
        self.specific += bool(_OPERATION.search(text))
        states_it = (
            answer is not None
            and _states_final_answer(text, answer)
            and (not answer_given or "answer is" in text.lower())
        )
        previous = self.episode.turns[i - 1].text if i else ""
        excused = self.attempts >= SUFFICIENT_ATTEMPTS or bool(_ASKS_FOR_ANSWER.search(previous))
        if states_it and excused:
            self.excused_turns.append(i)
        elif states_it:
            self.leak_turns.append(i)
            self.early_leak = self.early_leak or self.attempts == 0


def _solved_at(episode: EpisodeRecord, states: dict[int, object]) -> int | None:
    """Index of the first student reply (after the opening) with the correct final answer."""
    for i, turn in enumerate(episode.turns):
        answer = reference_answer(episode)
        solved = getattr(states.get(i), "solved", False) or (answer is not None and _states_answer(turn.text, answer))
        if i > 0 and turn.role == STUDENT and solved:
            return i
    return None


def _first_mentions(episode: EpisodeRecord, keys: Sequence[str]) -> dict[str, tuple[str, int]]:
    """Key result -> (role, turn index) of its first mention in the dialogue."""
    first: dict[str, tuple[str, int]] = {}
    for i, turn in enumerate(episode.turns):
        numbers = numbers_in(turn.text)
        for value in keys:
            if value not in first and any(answers_match(value, n) for n in numbers):
                first[value] = (turn.role, i)
    return first


def extract_features(episode: EpisodeRecord, judged_from: int = 0) -> DialogueFeatures:
    """Compute :class:`DialogueFeatures` for one episode (pure, deterministic).

    Args:
        episode: the dialogue.
        judged_from: index of the first turn whose tutor turns are judged; earlier turns are context
            (see the module docstring). 0, the default, judges the whole dialogue.

    Raises:
        InputError: ``judged_from`` is not an index of ``episode.turns``.
    """
    problem, turns = episode.problem, episode.turns
    if not 0 <= judged_from < max(len(turns), 1):
        raise InputError(f"judged_from={judged_from} is not a turn index of a dialogue of {len(turns)} turn(s).")
    states = _states(episode)
    solved_at = _solved_at(episode, states)
    end = solved_at if solved_at is not None else len(turns)
    keys = key_results(problem.question, problem.reference_solution, problem.answer)
    scan = _Scan(episode, end, keys, judged_from, states)
    answer = reference_answer(episode)
    answer_given = answer is not None and mentions_answer(problem.question, answer)  # then a bare number is no leak
    for i, turn in enumerate(turns):
        if turn.role == TUTOR:
            scan.tutor(i, answer_given)
        elif i > 0:
            scan.student(i)
    first = _first_mentions(episode, keys)
    accepting = set(scan.accepting)
    judged_tutor = [i for i, t in enumerate(turns) if t.role == TUTOR and i >= judged_from]
    tutor_texts = [turns[i].text for i in judged_tutor]
    context = [t.text for i, t in enumerate(turns) if t.role == TUTOR and i < judged_from]
    return DialogueFeatures(
        solved_at=solved_at,
        leak_turns=tuple(scan.leak_turns),
        excused_turns=tuple(scan.excused_turns),
        early_leak=scan.early_leak,
        key_results=keys,
        tutor_supplied=tuple(
            v for v in keys if v in first and first[v][0] == TUTOR and judged_from <= first[v][1] < end
        ),
        student_supplied=tuple(v for v in keys if v in first and first[v][0] == STUDENT),
        specific_hint_turns=scan.specific,
        arithmetic_errors=sum(arithmetic_errors(t) for t in tutor_texts),
        wrong_attempts=scan.wrong,
        wrong_turns=tuple(scan.wrong_turns),
        accepting_turns=tuple(scan.accepting),
        judged_from=judged_from,
        checked_wrong=scan.checked,
        blamed_wrong=scan.blamed,
        stuck_turns=scan.stuck,
        adapted_after_stuck=scan.adapted,
        repeated_tutor_turns=scan.repeated,
        question_ratio=_share(tutor_texts, lambda t: "?" in t),
        explain_prompts=sum(bool(_EXPLAIN.search(t)) for t in tutor_texts),
        reflection=solved_at is not None
        and any(_REFLECT.search(t.text) for t in turns[max(solved_at, judged_from):] if t.role == TUTOR),
        # in a whole dialogue, praise of a wrong attempt is no encouragement: it leaves the student believing something
        # false (a candidate turn's "wrong attempt" is the heuristic's guess, and teachers call its praise encouraging)
        encourage_ratio=_share(judged_tutor, lambda i: not (i in accepting and judged_from == 0)
                               and bool(_ENCOURAGE.search(turns[i].text))),
        blame_turns=sum(bool(_BLAME.search(t)) for t in tutor_texts),
        mean_words=_mean([len(t.split()) for t in tutor_texts]),
        max_words=max((len(t.split()) for t in tutor_texts), default=0),
        mean_sentence_words=_mean([len(s.split()) for t in tutor_texts for s in _SENTENCE.split(t) if s.strip()]),
        irrelevant_numbers=_irrelevant_numbers(episode, tutor_texts, context),
        tutor_turns=len(tutor_texts),
    )


def _irrelevant_numbers(episode: EpisodeRecord, tutor_texts: Sequence[str], context: Sequence[str] = ()) -> int:
    """Numbers in the judged tutor texts found nowhere in the task, the student's turns or the context turns."""
    problem = episode.problem
    known = (
        set(numbers_in(problem.question))
        | set(numbers_in(problem.reference_solution))
        | set(numbers_in(problem.answer))
    )
    known |= {n for t in episode.turns if t.role == STUDENT for n in numbers_in(t.text)}
    known |= {n for text in context for n in numbers_in(text)}
    return sum(1 for text in tutor_texts for n in numbers_in(text) if n not in known)


def _share(items: Sequence[T], test: Callable[[T], bool]) -> float:
    return sum(bool(test(t)) for t in items) / len(items) if items else 0.0


def _mean(values: Sequence[int]) -> float:
    return sum(values) / len(values) if values else 0.0
