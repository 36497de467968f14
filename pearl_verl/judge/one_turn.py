"""Judging one candidate next tutor turn, given the conversation so far, with the existing judges.

Human labels on tutoring (MRBench, the BEA 2025 shared task) are given on single responses: a
conversation cut where the tutor speaks next, and several candidate next turns. Our judges score whole
dialogues, so a candidate is judged as the last turn of an :class:`EpisodeRecord` built from the
conversation (:func:`candidate_episode`) and only the candidate turn is judged:

- the offline heuristic judge reads the earlier turns as context (``judged_from``, see
  :mod:`pearl_verl.judge.features`): the student's attempts and every number said count, earlier tutor
  turns are not scored; the fitted judge (:mod:`pearl_verl.judge.fitted.judge`) does the same, its model
  scoring the candidate given the conversation;
- the LLM judge gets the one-turn prompt (:func:`pearl_verl.judge.prompt.one_turn_messages`): the
  candidate marked, the rule that only it is judged, the same rubric and output contract, so the same
  strict parser reads the reply.

What comes back is the criteria a single turn can show (:data:`~pearl_verl.judge.rubric.ONE_TURN_CRITERIA`),
each on [0, 1] and ungated: the completion gate belongs to a finished session and a cut conversation
has none. A judgement that fails (endpoint down, reply unparsable) is a failure with its error, never a
score.

The problem an MRBench row gives the judge (:func:`problem_of`): MathDial rows state the question in the
opening tutor turn ("... The question is: ...") and carry a worked solution whose last line is the final
answer; Bridge rows carry only a lesson topic, the BEA 2025 files nothing. What is absent is written
:data:`~pearl_verl.judge.judge_contract.NOT_GIVEN` rather than guessed: no answer is derived from the
conversation or from the candidates, so the offline judge, which detects a revealed answer only by
comparing numbers with the reference answer, finds no leak in a row without one.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pearl_verl.data.mrbench import HumanConversation
from pearl_verl.dialogue.answers import numbers_in
from pearl_verl.dialogue.episode import TUTOR, DialogueTurn, EpisodeRecord
from pearl_verl.dialogue.problem import Problem
from pearl_verl.dialogue.student_contract import StudentCondition
from pearl_verl.errors import InputError
from pearl_verl.judge.backends import judge_backends
from pearl_verl.judge.judge_contract import NOT_GIVEN, JudgeResult
from pearl_verl.judge.prompt import one_turn_messages
from pearl_verl.judge.rubric import ONE_TURN_CRITERIA

ONE_TURN_BACKENDS = judge_backends(scores_criteria=True)
"""The judge backends that can score one candidate turn (the probes score no criteria)."""

CUT_END_REASON = "turn_limit"
"""The ``end_reason`` of a candidate episode: the session is cut at the candidate turn. Neither judge reads
it for a one-turn criterion (the one-turn prompt does not show it)."""

_QUESTION = re.compile(r"The question is:\s*(.+)", re.DOTALL | re.IGNORECASE)


@dataclass(frozen=True)
class TurnJudgement:
    """The judgement of one candidate next tutor turn.

    Attributes:
        ok: False when the judge failed (endpoint down, reply unparsable, features not computable).
        scores: criterion id -> score on [0, 1], ungated, for every criterion of
            :data:`~pearl_verl.judge.rubric.ONE_TURN_CRITERIA`; None when not ok.
        rationales: criterion id -> the judge's rationale, for the same criteria; empty when not ok.
        error: why it failed, when not ok.
        reason: the failure's kind (``llm_<reason>``, ``parse_<reason>``, ...) when known.
        latency_s: wall time of the judgement.
    """

    ok: bool
    scores: Mapping[str, float] | None = None
    rationales: Mapping[str, str] | None = None
    error: str | None = None
    reason: str | None = None
    latency_s: float = 0.0


def problem_of(conversation: HumanConversation) -> Problem:
    """The problem an MRBench or BEA 2025 conversation gives the judge (see the module docstring).

    Question: the text after "The question is:" in the first turn when there is one (every MathDial row);
    otherwise :data:`NOT_GIVEN` with the lesson topic when there is one ("the exercise is the one posed in
    the conversation"). Reference solution: the row's worked solution, else empty. Reference answer: the
    solution's last line when that line is one number (MathDial's layout), else :data:`NOT_GIVEN`.
    """
    opening = _QUESTION.search(conversation.turns[0][1]) if conversation.turns else None
    if opening:
        question = opening.group(1).strip()
    else:
        topic = f"; lesson topic: {conversation.topic}" if conversation.topic else ""
        question = f"(not given: the exercise is the one posed in the conversation{topic})"
    solution = (conversation.ground_truth_solution or "").strip()
    return Problem(
        problem_id=f"mrbench-row{conversation.index}-{conversation.conversation_id}",
        question=question,
        reference_solution=solution,
        answer=_final_answer(solution) or NOT_GIVEN,
        source=f"mrbench/{conversation.source}" if conversation.source else "mrbench",
    )


def _final_answer(solution: str) -> str | None:
    """The last line of a worked solution when it is exactly one number (MathDial ends on ``" 2000"``)."""
    lines = [line.strip() for line in solution.splitlines() if line.strip()]
    if not lines:
        return None
    numbers = numbers_in(lines[-1])
    return numbers[0] if len(numbers) == 1 and lines[-1].replace(",", "").strip() == numbers[0] else None


def candidate_episode(
    history: tuple[tuple[str, str], ...] | list[tuple[str, str]], candidate: str, problem: Problem
) -> EpisodeRecord:
    """The conversation so far plus ``candidate`` as its last tutor turn, as an episode the judges take.

    Args:
        history: ``(role, text)`` turns, role ``"tutor"`` or ``"student"`` (as :class:`HumanConversation.turns`).
        candidate: the candidate next tutor turn.
        problem: what the conversation is about (:func:`problem_of`).

    Returns:
        An episode with no student state trace, the default student condition (neither judge reads it for
        a one-turn criterion) and ``end_reason`` :data:`CUT_END_REASON`.

    Raises:
        InputError: an empty candidate, or a role other than tutor or student.
    """
    if not candidate.strip():
        raise InputError("the candidate tutor turn is empty.")
    turns = tuple(DialogueTurn(role, text) for role, text in history) + (DialogueTurn(TUTOR, candidate.strip()),)
    return EpisodeRecord(problem, StudentCondition(), turns, (), CUT_END_REASON)


class OneTurnJudge:
    """Scores the last turn of a candidate episode with an existing judge (offline or LLM).

    Args:
        judge: a :class:`~pearl_verl.judge.offline.HeuristicJudge` (judged from the last turn on), or an
            :class:`~pearl_verl.judge.llm_judge.LLMJudge` built with the one-turn prompt
            (:func:`build_one_turn_judge` does this from a :class:`~pearl_verl.judge.judge_config.JudgeConfig`).

    Raises:
        InputError: an LLM judge with the whole-dialogue prompt (it would score the whole conversation), or a
            judge of another kind (the probes reward one surface property and score no criteria).
    """

    def __init__(self, judge: Any) -> None:
        from pearl_verl.judge.llm_judge import LLMJudge
        from pearl_verl.judge.offline import HeuristicJudge

        if isinstance(judge, LLMJudge):
            if judge.prompt is not one_turn_messages:
                raise InputError("an LLM judge of one turn needs the one-turn prompt "
                                 "(LLMJudge(prompt=one_turn_messages)).")
        elif not isinstance(judge, HeuristicJudge):  # the fitted judge is one too
            raise InputError(f"{type(judge).__name__} cannot judge one turn; use the offline, fitted or an LLM judge.")
        self.judge = judge

    async def judge_turn(self, episode: EpisodeRecord) -> TurnJudgement:
        """Judge the last turn of ``episode``; failures come back as ``ok=False``, never raised."""
        from pearl_verl.judge.offline import HeuristicJudge

        start = time.perf_counter()
        if not episode.turns or episode.turns[-1].role != TUTOR:
            return TurnJudgement(ok=False, error="the dialogue does not end on a candidate tutor turn", reason="input")
        if isinstance(self.judge, HeuristicJudge):
            result = await self.judge.judge(episode, judged_from=len(episode.turns) - 1)
        else:
            result = await self.judge.judge(episode)
        return turn_judgement(result, time.perf_counter() - start)


def turn_judgement(result: JudgeResult, latency_s: float = 0.0) -> TurnJudgement:
    """The one-turn criteria of a judgement, ungated; a failed judgement, or one that lacks any, is a failure."""
    if not result.ok:
        return TurnJudgement(ok=False, error=result.error, reason=result.reason, latency_s=latency_s)
    by_id = {f"{c.dimension}.{c.criterion}": c for c in result.criteria}
    missing = [cid for cid in ONE_TURN_CRITERIA if cid not in by_id]
    if missing:
        return TurnJudgement(ok=False, error=f"the judgement lacks the criteria {missing}", reason="internal",
                             latency_s=latency_s)
    return TurnJudgement(
        ok=True,
        scores={cid: by_id[cid].score for cid in ONE_TURN_CRITERIA},
        rationales={cid: by_id[cid].rationale for cid in ONE_TURN_CRITERIA},
        latency_s=latency_s,
    )


def build_one_turn_judge(config: Any) -> OneTurnJudge:
    """A :class:`OneTurnJudge` from a :class:`~pearl_verl.judge.judge_config.JudgeConfig` (``offline``, ``fitted`` or ``llm``).

    Raises:
        InputError: another backend (the probes).
    """
    from pearl_verl.judge.judge_config import build_judge

    if config.backend not in ONE_TURN_BACKENDS:
        raise InputError(f"backend {config.backend!r} cannot judge one turn; use {', '.join(ONE_TURN_BACKENDS)}.")
    return OneTurnJudge(build_judge(config, prompt=one_turn_messages))
