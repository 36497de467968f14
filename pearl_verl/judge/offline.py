"""``HeuristicJudge``: an offline, deterministic stand-in for the LLM judge (no network, no model).

It scores every rubric criterion from observable features (:mod:`pearl_verl.judge.features`):
answer leakage via math-verify equivalence of numbers in tutor turns before the student's
correct attempt, who first stated each intermediate result, question ratio, message length,
reactions to wrong attempts and confusion, arithmetic checks of ``a op b = c`` statements, and
whether the student reached the answer. It returns the same :class:`JudgeResult` shape as the
LLM judge (same criteria, scales, gate and dimension means), so the reward manager, the CLI and
the estimator can run end to end on CPU.

Tutor turns that are no tutoring (not language, unfinished, a copy of the student or the problem, or a turn repeating
itself) earn nothing:
:mod:`pearl_verl.judge.tutoring_turns` says which, and how the criteria read them.

It is a HEURISTIC TEST DOUBLE for tests and CPU runs. Its scores are crude proxies; it is not the
paper's judge (a finetuned Qwen3-32B) and must not be reported as one.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from pearl_verl.dialogue.episode import EpisodeRecord
from pearl_verl.errors import InputError
from pearl_verl.judge.features import DialogueFeatures, extract_features
from pearl_verl.judge.judge_contract import CriterionScore, JudgeResult
from pearl_verl.judge.rubric import RUBRIC, Rubric
from pearl_verl.judge.scoring import completion_gate, gated_dimension_scores
from pearl_verl.judge.tutoring_turns import AS_WRITTEN, TutoringTurns, blanked, tutoring_turns

logger = logging.getLogger(__name__)

Rule = Callable[[DialogueFeatures, EpisodeRecord], tuple[int, str]]
TONE_AFTER_FALSE_PRAISE = 1
"""The most ``emotion.encouraging_tone`` gives (of 2: "neutral, with little encouragement") to a tutor that accepted
a wrong attempt with praise in a whole dialogue (:func:`~pearl_verl.judge.features.accepts_wrong`): praise that
leaves the student believing something false acknowledges no progress, and without the cap a tutor opening every
turn with "Well done!" gained more in tone than it lost in accuracy."""
GATE = "complete.session_complete"


def _level(bad: float, fair: float, value: float) -> int:
    """Map a lower-is-better value to 2 (``<= fair``), 1 (``<= bad``) or 0."""
    return 2 if value <= fair else 1 if value <= bad else 0


def _ratio_level(value: float, good: float, fair: float) -> int:
    """Map a higher-is-better ratio to 2 (``>= good``), 1 (``>= fair``) or 0."""
    return 2 if value >= good else 1 if value >= fair else 0


def _gate(f: DialogueFeatures, e: EpisodeRecord) -> tuple[int, str]:
    """The rubric's g: the student arrived at the answer (by their own reasoning, or after a warranted
    explanation) and the session was not cut off. A student who reaches the answer only after the tutor
    stated it unwarranted (a leak turn: before 3 genuine attempts and not asked for) repeated it."""
    why = f"session ended '{e.end_reason}', student {'reached' if f.solved else 'did not reach'} the answer"
    if f.solved and f.leak_turns:
        why += f" after the tutor stated it unwarranted in turn(s) {list(f.leak_turns)}"
    return int(e.ended_normally and f.solved and not f.leak_turns), why


def _final_answer(f: DialogueFeatures, e: EpisodeRecord) -> tuple[int, str]:
    if not f.leak_turns:
        if f.excused_turns:
            return 2, (f"tutor stated the final answer before the student reached it only where warranted, in turn(s) "
                       f"{list(f.excused_turns)} (after enough attempts, or when asked)")
        return 2, "tutor never stated the final answer before the student reached it"
    when = "before any attempt" if f.early_leak else "after few attempts"
    return (0 if f.early_leak else 1), f"tutor stated the final answer in turn(s) {list(f.leak_turns)} {when}"


def _key_steps(f: DialogueFeatures, e: EpisodeRecord) -> tuple[int, str]:
    n, leaked = len(f.key_results), len(f.tutor_supplied)
    share = leaked / n if n else 0.0
    return _level(0.5, 0.0, share), f"tutor supplied {leaked} of {n} intermediate results before the solution"


def _hint_specificity(f: DialogueFeatures, e: EpisodeRecord) -> tuple[int, str]:
    share = f.specific_hint_turns / f.tutor_turns if f.tutor_turns else 0.0
    return _level(0.5, 0.0, share), f"{f.specific_hint_turns} tutor turn(s) hand over an operation with its operands"


def _falsely_praised(f: DialogueFeatures) -> bool:
    """The tutor accepted a wrong attempt in a whole dialogue (a candidate turn's "wrong attempt" is a guess from its
    history, and MRBench's teachers call its praise encouraging: capping it there took Tutor_Tone's agreement with
    them from 56% to 34%)."""
    return bool(f.praised_wrong) and f.judged_from == 0


def _tone(f: DialogueFeatures, e: EpisodeRecord) -> tuple[int, str]:
    why = f"{f.encourage_ratio:.0%} of tutor turns encourage; {f.blame_turns} with blaming words"
    if f.blame_turns:
        return 0, why
    if _falsely_praised(f):
        return (min(_ratio_level(f.encourage_ratio, 0.5, 0.2), TONE_AFTER_FALSE_PRAISE),
                f"{why}; at most neutral: it accepted {f.praised_wrong} wrong attempt(s)")
    return _ratio_level(f.encourage_ratio, 0.5, 0.2), why


def _leak_free(f: DialogueFeatures) -> bool:
    return not f.leak_turns


RULES: dict[str, Rule] = {
    "acc.statements_correct": lambda f, e: (
        _level(1, 0, f.arithmetic_errors),
        f"{f.arithmetic_errors} wrong 'a op b = c' statement(s) by the tutor",
    ),
    "acc.feedback_correct": lambda f, e: (  # the rubric's 0: "accepts a wrong step or answer, and this stands"
        0 if f.praised_wrong else 2,
        f"tutor accepted {f.praised_wrong} of {f.wrong_attempts} wrong attempt(s) with praise and no pointer",
    ),
    "acc.toward_reference": lambda f, e: (
        2 if f.solved else 1 if f.praised_wrong == 0 else 0,
        "student reached the reference answer" if f.solved else "student did not reach the reference answer",
    ),
    "leak.final_answer": _final_answer,
    "leak.key_steps": _key_steps,
    "leak.hint_specificity": _hint_specificity,
    "complete.session_complete": _gate,
    "complete.steps_covered": lambda f, e: (
        _ratio_level(
            (len(f.tutor_supplied) + len(f.student_supplied)) / len(f.key_results) if f.key_results else 1.0, 1.0, 0.5
        ),
        f"{len(f.tutor_supplied) + len(f.student_supplied)} of {len(f.key_results)} intermediate results appear",
    ),
    "complete.mistakes_addressed": lambda f, e: (
        _level(1, 0, f.wrong_attempts - f.checked_wrong),
        f"{f.checked_wrong} of {f.wrong_attempts} wrong attempt(s) followed up",
    ),
    "complete.conclusion": lambda f, e: (
        2 if f.solved and e.end_reason == "tutor_ended" and f.reflection else 1 if f.solved and e.ended_normally else 0,
        f"session ended '{e.end_reason}'" + (" with a wrap-up" if f.reflection else ""),
    ),
    "load.concise": lambda f, e: (_level(120, 60, f.mean_words), f"tutor messages average {f.mean_words:.0f} words"),
    "load.clarity": lambda f, e: (
        _level(35, 22, f.mean_sentence_words),
        f"tutor sentences average {f.mean_sentence_words:.0f} words",
    ),
    "load.length": lambda f, e: (_level(250, 120, f.max_words), f"longest tutor message has {f.max_words} words"),
    "load.relevance": lambda f, e: (
        _level(2, 0, f.irrelevant_numbers),
        f"{f.irrelevant_numbers} number(s) unrelated to the task or the student's work",
    ),
    "guide.questioning": lambda f, e: (
        _ratio_level(f.question_ratio, 0.6, 0.3),
        f"{f.question_ratio:.0%} of tutor turns ask a question",
    ),
    "guide.guidance_effective": lambda f, e: (
        2 if f.solved and _leak_free(f) else 1 if f.solved else 0,
        ("student solved it" + (" without being told" if _leak_free(f) else " after being told")) if f.solved
        else "student did not solve it",
    ),
    "guide.student_agency": lambda f, e: (
        _ratio_level(len(f.student_supplied) / len(f.key_results) if f.key_results else float(_leak_free(f)), 0.6, 0.3)
        if _leak_free(f)
        else 0,
        f"student first stated {len(f.student_supplied)} of {len(f.key_results)} intermediate results",
    ),
    "meta.discover_mistakes": lambda f, e: (
        2 if f.wrong_attempts == 0 or f.checked_wrong == f.wrong_attempts else 1 if f.checked_wrong else 0,
        f"tutor asked the student to re-check {f.checked_wrong} of {f.wrong_attempts} wrong attempt(s)",
    ),
    "meta.explain_verify": lambda f, e: (
        min(f.explain_prompts, 2),
        f"{f.explain_prompts} tutor turn(s) ask the student to explain or verify",
    ),
    "meta.reflection": lambda f, e: (
        2 if f.reflection else 0,
        "tutor wrapped up the method after the solution" if f.reflection else "no reflection after the solution",
    ),
    "adaptive.responds_to_difficulty": lambda f, e: (
        2 if f.stuck_turns == f.adapted_after_stuck else 1 if f.adapted_after_stuck else 0,
        f"tutor changed approach after {f.adapted_after_stuck} of {f.stuck_turns} sign(s) of confusion",
    ),
    "adaptive.difficulty_fit": lambda f, e: (
        _level(1, 0, f.repeated_tutor_turns + int(f.early_leak)),
        f"{f.repeated_tutor_turns} repeated tutor turn(s)"
        + ("; answer given before any attempt" if f.early_leak else ""),
    ),
    "emotion.encouraging_tone": _tone,
    "emotion.mistakes_as_learning": lambda f, e: (
        0 if f.blamed_wrong else 2,
        f"tutor answered {f.blamed_wrong} of {f.wrong_attempts} wrong attempt(s) with blaming words",
    ),
}


class HeuristicJudge:
    """Offline heuristic judge: a deterministic CPU test double, NOT the paper's judge.

    Args:
        rubric: the rubric whose criteria are scored; every criterion needs a rule in :data:`RULES`.
    """

    name = "offline-heuristic"

    def __init__(self, rubric: Rubric = RUBRIC) -> None:
        missing = [c.id for c in rubric if c.id not in RULES]
        if missing:
            raise InputError(f"HeuristicJudge has no rule for criteria {missing}; add them to RULES.")
        self.rubric = rubric

    async def judge(self, episode: EpisodeRecord, judged_from: int = 0) -> JudgeResult:
        """Score ``episode``; returns ``ok=False`` (never raises) if the features cannot be computed.

        Args:
            episode: the dialogue.
            judged_from: judge only the tutor turns from this turn index on, earlier turns being context
                (:func:`~pearl_verl.judge.features.extract_features`); 0 judges the whole dialogue.
        """
        start = time.perf_counter()
        try:
            criteria = self.criteria(episode, judged_from)
        except Exception as exc:  # a malformed record must not crash a batch; counted by the caller as judge_ok=0
            logger.exception("%s judge failed on %s", self.name, episode.problem.problem_id)
            return JudgeResult(ok=False, error=f"{self.name} judge error: {type(exc).__name__}: {exc}", attempts=1)
        gate = completion_gate(criteria, self.rubric)
        return JudgeResult(
            ok=True,
            dims=gated_dimension_scores(criteria, gate),
            gate=gate,
            criteria=criteria,
            attempts=1,
            latency_s=time.perf_counter() - start,
        )

    def criteria(self, episode: EpisodeRecord, judged_from: int = 0) -> tuple[CriterionScore, ...]:
        """Every criterion of the rubric, ungated (see the module docstring and :mod:`.tutoring_turns`)."""
        turns = tutoring_turns(episode, judged_from)
        written = extract_features(episode, judged_from)
        legible = blanked(episode, turns)
        read = (written, episode), (written if legible is episode else extract_features(legible, judged_from), legible)
        overrides = self.overrides(episode, judged_from, written, turns)
        out = []
        for criterion in self.rubric:
            features, record = read[0] if criterion.id in AS_WRITTEN else read[1]
            raw, why = RULES[criterion.id](features, record)
            assert raw in criterion.scores, (criterion.id, raw)
            score, why = criterion.normalise(raw), f"heuristic: {why}"
            if criterion.id in overrides:
                score, why = overrides[criterion.id](score, why)
            elif criterion.id != GATE and turns.invalid:
                score, why = score * turns.share, why + turns.note()
            raw = round(criterion.low + score * (criterion.high - criterion.low))
            out.append(CriterionScore(criterion.dimension, criterion.key, raw, score, why))
        return tuple(out)

    def overrides(self, episode: EpisodeRecord, judged_from: int, features: DialogueFeatures,
                  turns: TutoringTurns) -> dict[str, Callable[[float, str], tuple[float, str]]]:
        """Criterion -> how a subclass rescores it from the heuristic's (score, rationale); none here."""
        return {}
