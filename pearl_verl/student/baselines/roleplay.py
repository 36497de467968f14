"""The shared machinery of prompt-only students: one LLM call per turn with a role-play system prompt.

A baseline turn is a single chat call over ``[system prompt, dialogue...]`` (tutor = ``user``,
student = ``assistant``). An empty reply is retried within ``parse_attempts`` and then handled by
``on_parse_failure`` (a neutral "I'm not sure." or ``LLMCallError``). Baseline students never end
a session themselves; the tutor or the turn limit does.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence

from pearl_verl.dialogue.answers import numbers_in
from pearl_verl.dialogue.episode import STUDENT, TUTOR, DialogueTurn
from pearl_verl.dialogue.problem import Problem
from pearl_verl.dialogue.student_contract import StudentCondition, StudentTurn, StudentTurnState
from pearl_verl.knowledge.decomposition import reference_steps, step_result
from pearl_verl.llm.chat_types import ChatBackend, LLMCallError, Message
from pearl_verl.student.consistency import clean_message, role_issues
from pearl_verl.student.planner import to_number
from pearl_verl.student.reading import states_correct_answer
from pearl_verl.student.student_config import StudentConfig
from pearl_verl.student.student_prompts import dialogue_messages

logger = logging.getLogger(__name__)

FALLBACK_MESSAGE = "I'm not sure."


def heuristic_attempt(problem: Problem, text: str) -> str:
    """A rule-based attempt label for a baseline turn (tracing only; evaluations annotate with an LLM).

    ``correct`` when the message states the final answer or ends with a reference-step result;
    ``incorrect`` when it ends with a number found neither in the question nor in the solution;
    ``none`` otherwise (this heuristic never says ``partial``).
    """
    if states_correct_answer(problem, text):
        return "correct"
    numbers = numbers_in(text)
    if not numbers:
        return "none"
    last = to_number(numbers[-1])
    results = [to_number(step_result(step)) for step in reference_steps(problem)]
    if last is not None and any(r is not None and abs(r - last) < 1e-6 for r in results):
        return "correct"
    known = [to_number(n) for n in numbers_in(problem.question)]
    if last is not None and any(k is not None and abs(k - last) < 1e-6 for k in known):
        return "none"
    return "incorrect"


class RolePlaySession:
    """One prompt-only student in one dialogue."""

    def __init__(
        self,
        backend: ChatBackend,
        config: StudentConfig,
        problem: Problem,
        system_prompt: str,
        opening: str,
        opening_attempt: str,
    ):
        self.backend = backend
        self.config = config
        self.problem = problem
        self.system_prompt = system_prompt
        self.usage: Counter[str] = Counter()
        self._turns: list[DialogueTurn] = [DialogueTurn(STUDENT, opening)]
        self._trace = [StudentTurnState(0, (), opening_attempt, {}, False, False, 0)]
        self._solved = False

    @property
    def trace(self) -> Sequence[StudentTurnState]:
        return tuple(self._trace)

    async def respond(self, tutor_message: str) -> StudentTurn:
        """One role-play call; raises ``LLMCallError`` when the endpoint fails for good."""
        self._turns.append(DialogueTurn(TUTOR, tutor_message))
        messages: list[Message] = [{"role": "system", "content": self.system_prompt}, *dialogue_messages(self._turns)]
        text, calls, source = await self._call(messages)
        self._solved = self._solved or states_correct_answer(self.problem, text)
        state = StudentTurnState(
            len(self._trace), (), heuristic_attempt(self.problem, text), {}, self._solved, False, calls,
            reply_source=source,
        )
        self._trace.append(state)
        self._turns.append(DialogueTurn(STUDENT, text))
        return StudentTurn(text, state)

    async def _call(self, messages: list[Message]) -> tuple[str, int, str]:
        # the prompt-only protocol has no plan to check against, but the same role checks as the PEARL
        # student: not empty, not cut at max_tokens, not too long, in role, not its own instructions
        issues: list[str] = []
        for attempt in range(1, self.config.parse_attempts + 1):
            result = await self.backend.chat(messages, self.config.sampling())
            text = clean_message(result.text)
            finish = result.finish_reasons[0] if result.finish_reasons else None
            issues = role_issues(text, self.config.max_message_chars, finish)
            if not issues:
                return text, attempt, "llm"
            self.usage["parse_failures"] += 1
            logger.info("baseline student reply rejected for %s: %s", self.problem.problem_id, "; ".join(issues))
        if self.config.on_parse_failure == "raise":
            raise LLMCallError(f"baseline student replies were rejected: {'; '.join(issues)}", "parse",
                               self.config.parse_attempts)
        self.usage["fallbacks"] += 1
        logger.info("baseline student gave no usable reply for %s; using a neutral message", self.problem.problem_id)
        return FALLBACK_MESSAGE, self.config.parse_attempts, "fallback"


def backend_for(config: StudentConfig, backend: ChatBackend | None) -> ChatBackend:
    """The given backend, or an ``OpenAIChatClient`` for the config's endpoint."""
    if backend is not None:
        return backend
    from pearl_verl.llm.client import OpenAIChatClient

    return OpenAIChatClient(config.endpoint(), config.sampling())


def opening_message(problem: Problem, condition: StudentCondition, work: str | None) -> str:
    """The baselines' opening: the problem, and the student's own (possibly wrong) work when given."""
    text = f"Hi, I'm working on this problem: {problem.question.strip()}"
    return f"{text}\nHere is what I did: {work.strip()}" if work else text
