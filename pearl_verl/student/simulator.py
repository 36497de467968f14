"""The controllable student simulator (paper §3.1): decomposition, state, plan, realise, check.

One turn of :meth:`PearlStudentSession.respond`, given the tutor's message a^t:

1. read a^t (rule-based: addressed step, exposed units, praise, error flag, revealed answer);
2. update mastery, ``m^{t+1} = f_update(q, h, m^t, a^t, u^t)`` (:mod:`pearl_verl.student.mastery`);
3. plan z^{t+1}: special turns (wrap-up after solving, off-topic, leaving) by rule; otherwise the
   cognitive model draws the attempt and the planner (rules, or one LLM call) adds behaviour labels;
4. realise the message (templates, or one LLM call);
5. run the cheap consistency check; only on failure refine (one LLM call), re-check, and fall back
   to the template realisation of the same plan if it still fails.

LLM calls per reply turn are therefore 0 (offline), 1-2 plus a refine call on failed checks (LLM
backend), and 0 for rule-decided special turns; each turn's count is in ``StudentTurnState.llm_calls``.
The opening (turn 0) carries the decomposition's LLM calls (0 on a cache hit).
"""

from __future__ import annotations

import copy
import logging
import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from enum import Enum, auto
from typing import TypeVar

from pearl_verl.dialogue.answers import answers_match, numbers_in
from pearl_verl.dialogue.episode import STUDENT, TUTOR, DialogueTurn
from pearl_verl.dialogue.problem import Problem
from pearl_verl.dialogue.student_contract import StudentCondition, StudentTurn, StudentTurnState
from pearl_verl.errors import InputError
from pearl_verl.knowledge.cache import DecompositionCache
from pearl_verl.knowledge.curriculum import Curriculum, load_curriculum
from pearl_verl.knowledge.decompose_once import Decomposer
from pearl_verl.knowledge.decomposition import Decomposition
from pearl_verl.llm.chat_types import ChatBackend, LLMCallError, Message
from pearl_verl.student import mastery as mastery_rules
from pearl_verl.student import student_prompts as prompts
from pearl_verl.student.consistency import check_message, clean_message
from pearl_verl.student.offline_realiser import minimal_message, opening_text, realise
from pearl_verl.student.planner import (
    Mind,
    Plan,
    advance,
    cognitive_draw,
    initial_engagement,
    plan_rules,
    rule_labels,
    special_turn,
)
from pearl_verl.student.reading import TutorMove, read_tutor, states_correct_answer
from pearl_verl.student.student_config import StudentConfig
from pearl_verl.student.taxonomy import ordered_labels

logger = logging.getLogger(__name__)

T = TypeVar("T")

_NO_ATTEMPT_DROPS = frozenset({"guessing", "self_correction", "persistence", "explaining_reasoning"})


class Phase(Enum):
    WORKING = auto()
    SOLVED = auto()
    ENDED = auto()


class PearlStudentSimulator:
    """Creates controllable student sessions.

    Args:
        config: the student settings (``simulator`` must be ``pearl``).
        backend: the chat backend for ``backend="llm"`` (and an LLM decomposer); built from the
            config's endpoint when None. Ignored by the offline backend.
        curriculum: the vocabulary and rules; loaded from the config when None.
        decomposer: shared decomposer; built from the config when None.
    """

    def __init__(
        self,
        config: StudentConfig,
        backend: ChatBackend | None = None,
        curriculum: Curriculum | None = None,
        decomposer: Decomposer | None = None,
    ):
        if config.simulator != "pearl":
            raise InputError(
                f"PearlStudentSimulator needs simulator='pearl', got {config.simulator!r}; use build_simulator."
            )
        self.config = config
        self.curriculum = curriculum or load_curriculum(config.curriculum_path)
        if backend is None and config.needs_endpoint:
            from pearl_verl.llm.client import OpenAIChatClient

            backend = OpenAIChatClient(config.endpoint(), config.sampling())
        self.backend = backend
        if decomposer is None:
            cache = DecompositionCache(config.cache_dir) if config.cache_dir else None
            llm = config.decomposer_kind == "llm"
            decomposer = Decomposer(self.curriculum, backend if llm else None, config.model if llm else None, cache)
        self.decomposer = decomposer
        self.stats: Counter[str] = Counter()

    def opening(self, problem: Problem, condition: StudentCondition) -> str:
        """The student's first message (deterministic in problem and condition)."""
        return opening_text(problem, condition)[0]

    async def start(
        self, problem: Problem, condition: StudentCondition, seed: int, opening: str
    ) -> PearlStudentSession:
        """Decompose (cached), set m^0 from the condition, and open a session that has said ``opening``.

        Raises:
            InputError: for an explicit initial mastery that names unknown units or breaks the
                prerequisite order (with ``strict_prerequisites``).
        """
        decomposition, calls = await self.decomposer.decompose(problem)
        graph = decomposition.graph()
        m0 = mastery_rules.initial_mastery(
            graph,
            self.curriculum,
            condition,
            f"{condition.seed}|{problem.problem_id}",
            self.config.strict_prerequisites,
        )
        self.stats["sessions"] += 1
        self.stats["llm_calls"] += calls
        return PearlStudentSession(self, problem, condition, seed, opening, decomposition, m0, calls)


class PearlStudentSession:
    """One simulated student in one dialogue (see the module docstring for a turn's steps)."""

    def __init__(
        self,
        simulator: PearlStudentSimulator,
        problem: Problem,
        condition: StudentCondition,
        seed: int,
        opening: str,
        decomposition: Decomposition,
        m0: dict[str, float],
        opening_calls: int,
    ):
        self.simulator = simulator
        self.config = simulator.config
        self.problem = problem
        self.condition = condition
        self.profile = condition.profile
        self.decomposition = decomposition
        self.graph = decomposition.graph()
        self.rate = mastery_rules.learning_rate(self.profile)
        self.usage: Counter[str] = Counter()
        self._rng = random.Random(f"member|{seed}|{problem.problem_id}")
        self._mind = Mind(
            mastery=dict(m0),
            engagement=initial_engagement(self.profile),
            misconception=condition.misconception is not None,
            belief=misconception_answer(problem, condition.misconception),
        )
        self._phase = Phase.WORKING
        self._turns: list[DialogueTurn] = [DialogueTurn(STUDENT, opening)]
        self._last_plan: Plan | None = None
        text, attempt, labels = opening_text(problem, condition)
        if opening != text:
            attempt, labels = ("incorrect", ("misconception",)) if condition.misconception else ("none", ())
        self._trace = [StudentTurnState(0, labels, attempt, dict(m0), False, False, opening_calls)]

    @property
    def trace(self) -> Sequence[StudentTurnState]:
        return tuple(self._trace)

    @property
    def mastery(self) -> dict[str, float]:
        return dict(self._mind.mastery)

    async def respond(self, tutor_message: str) -> StudentTurn:
        """The student's next message and state (see module docstring).

        Raises:
            LLMCallError: when the student endpoint fails for good, or a role's replies keep failing
                strict parsing and ``on_parse_failure="raise"``.
            InputError: when called after the student concluded.
        """
        if self._phase is Phase.ENDED:
            raise InputError(
                "respond() called after the student ended the session; stop at StudentTurnState.concluded."
            )
        before = (copy.deepcopy(self._mind), len(self._turns), self._rng.getstate())
        try:
            return await self._respond(tutor_message)
        except BaseException:  # leave the session as it was, so a caller may retry the same tutor message
            self._mind, self._turns[before[1] :] = before[0], []
            self._rng.setstate(before[2])
            raise

    async def _respond(self, tutor_message: str) -> StudentTurn:
        self._turns.append(DialogueTurn(TUTOR, tutor_message))
        own = [t.text for t in self._turns if t.role == STUDENT]
        move = read_tutor(tutor_message, self.problem, self.decomposition, self.simulator.curriculum, own)
        # Paper Eq. (1): m^{t+1} = f_update(q, h^{t-1}, m^t, a^t, u^t), moving only what this exchange made available.
        self._mind.mastery = mastery_rules.update_mastery(
            self.graph, self._mind.mastery, self._exposure(move), self.rate
        )
        calls = Counter()
        plan, plan_source = await self._plan(move, calls)
        text, reply_source = await self._realise(plan, calls)
        if not self._mind.solved and states_correct_answer(self.problem, text):
            self._mind.solved = True
            self._phase = Phase.SOLVED
        advance(self._mind, plan, move, self.profile, self._rng)
        concluded = plan.leave or plan.conclude
        if concluded:
            self._phase = Phase.ENDED
        state = StudentTurnState(
            turn=len(self._trace),
            intent=plan.labels,
            attempt=plan.attempt,
            mastery=dict(self._mind.mastery),
            solved=self._mind.solved,
            concluded=concluded,
            llm_calls=sum(calls.values()),
            plan_source=plan_source,
            reply_source=reply_source,
        )
        self._trace.append(state)
        self._turns.append(DialogueTurn(STUDENT, text))
        self._last_plan = plan
        self.usage.update(calls)
        self.simulator.stats["turns"] += 1
        self.simulator.stats["llm_calls"] += state.llm_calls
        return StudentTurn(text, state)

    def _exposure(self, move: TutorMove) -> dict[str, float]:
        """e_v: 1 for units the tutor's message made available, 0.5 for units of a praised correct step."""
        exposure = dict.fromkeys(move.units, 1.0)
        last = self._last_plan
        if last is not None and last.attempt == "correct" and last.step is not None and move.praises:
            for unit in self.decomposition.steps[last.step].units:
                exposure[unit] = max(exposure.get(unit, 0.0), 0.5)
        return exposure

    async def _plan(self, move: TutorMove, calls: Counter[str]) -> tuple[Plan, str]:
        mind, config = self._mind, self.config
        if self.simulator.backend is None or config.backend == "offline" or config.planner == "rules":
            leaving = config.allow_leaving
            return plan_rules(mind, move, self.profile, self.decomposition, self.problem, self._rng, leaving), "rules"
        special = special_turn(mind, move, self.profile, self.decomposition, self._rng, config.allow_leaving)
        if special is not None:
            return special, "rules"
        drawn = cognitive_draw(mind, move, self.profile, self.decomposition, self.problem, self._rng)
        messages = prompts.planner_messages(
            drawn, self.problem, self._turns, self.profile, mind.mastery, self.simulator.curriculum
        )
        reply = await self._parsed_call(messages, prompts.parse_planner, "planner", calls)
        if reply is None:
            return replace(drawn, labels=rule_labels(drawn, mind, move, self.profile, self._rng)), "fallback"
        return self._constrain(drawn, reply), "llm"

    def _constrain(self, drawn: Plan, reply: prompts.PlannerReply) -> Plan:
        """Make LLM labels agree with the drawn attempt (documented in docs/simulator.md)."""
        labels = set(reply.behaviours) - {"misconception"}
        if drawn.misconception:
            labels.add("misconception")
        if drawn.attempt == "none":
            labels -= _NO_ATTEMPT_DROPS
        if reply.leave and self.config.allow_leaving and self._mind.failures >= 2:
            return Plan("none", ("frustration",), leave=True)
        return replace(drawn, labels=ordered_labels(labels))

    async def _realise(self, plan: Plan, calls: Counter[str]) -> tuple[str, str]:
        max_chars = self.config.max_message_chars
        offline = self.simulator.backend is None or self.config.backend == "offline"
        if offline:
            text = realise(plan, self.problem, self.decomposition, self._rng)
        else:
            messages = prompts.realiser_messages(
                plan,
                self.problem,
                self.decomposition,
                self._turns,
                self.profile,
                self._mind.mastery,
                self.simulator.curriculum,
                self.condition.misconception if self._mind.misconception else None,
            )
            text = await self._parsed_call(messages, _nonempty_message, "realiser", calls)
            if text is None:
                return minimal_message(plan, self.problem), "fallback"
        issues = check_message(text, plan, self.problem, max_chars)
        if not issues:
            return text, "template" if offline else "llm"
        self.usage["check_failures"] += 1
        if self.simulator.backend is not None and self.config.backend == "llm" and self.config.refine:
            messages = prompts.refine_messages(text, issues, plan, self.problem, self.decomposition)
            refined = await self._parsed_call(messages, _nonempty_message, "refine", calls, attempts=1)
            if refined is not None and not check_message(refined, plan, self.problem, max_chars):
                return refined, "refined"
        self.usage["template_fallbacks"] += 1
        logger.debug(
            "message for %s failed the consistency check %s; using the template", self.problem.problem_id, issues
        )
        return minimal_message(plan, self.problem), "template" if offline else "fallback"

    async def _parsed_call(
        self,
        messages: list[Message],
        parse: Callable[[str], T],
        role: str,
        calls: Counter[str],
        attempts: int | None = None,
    ) -> T | None:
        """Call the backend until ``parse`` accepts a reply (ValueError = rejected, as is a reply cut at
        ``max_tokens``; the retry quotes the reason).

        Returns:
            The parsed reply, or None after ``attempts`` rejected replies with ``on_parse_failure="fallback"``.

        Raises:
            LLMCallError: from the backend, or with reason ``parse`` after the bound with ``"raise"``.
        """
        attempts = attempts or self.config.parse_attempts
        error = ""
        for _ in range(attempts):
            calls[role] += 1
            result = await self.simulator.backend.chat(messages, self.config.sampling(role))
            try:
                if result.finish_reasons and result.finish_reasons[0] == "length":
                    raise InputError("the reply was cut off at the token limit; answer shorter")
                return parse(result.text)
            except ValueError as exc:
                error = str(exc)
                self.usage[f"parse_failures/{role}"] += 1
                logger.info("student %s reply rejected for %s: %s", role, self.problem.problem_id, error)
                messages = [
                    *messages,
                    {"role": "assistant", "content": result.text},
                    {
                        "role": "user",
                        "content": f"That reply was rejected ({error}). Answer again in the required format.",
                    },
                ]
        if self.config.on_parse_failure == "raise":
            raise LLMCallError(
                f"student {role} replies failed strict parsing {attempts} time(s): {error}", "parse", attempts
            )
        self.usage[f"fallbacks/{role}"] += 1
        self.simulator.stats[f"fallbacks/{role}"] += 1
        return None


def misconception_answer(problem: Problem, misconception: str | None) -> str | None:
    """The wrong final answer a misconception text ends with (its last number), if it is wrong."""
    if not misconception:
        return None
    numbers = numbers_in(misconception)
    return numbers[-1] if numbers and not answers_match(problem.answer, numbers[-1]) else None


def _nonempty_message(text: str) -> str:
    cleaned = clean_message(text)
    if not cleaned:
        raise InputError("the message is empty")
    return cleaned
