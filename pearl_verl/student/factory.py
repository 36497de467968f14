"""Build a student simulator from a ``StudentConfig`` (``simulator`` = pearl | mathdial | socraticlm)."""

from __future__ import annotations

from collections.abc import Callable

from pearl_verl.dialogue.student_contract import StudentSimulator
from pearl_verl.llm.chat_types import ChatBackend
from pearl_verl.student.baselines import MathDialStudentSimulator, SocraticLMStudentSimulator
from pearl_verl.student.simulator import PearlStudentSimulator
from pearl_verl.student.student_config import SIMULATORS, StudentConfig

SIMULATOR_CLASSES: dict[str, Callable[[StudentConfig, ChatBackend | None], StudentSimulator]] = {
    "pearl": lambda config, backend: PearlStudentSimulator(config, backend),
    "mathdial": MathDialStudentSimulator,
    "socraticlm": SocraticLMStudentSimulator,
}
assert set(SIMULATOR_CLASSES) == set(SIMULATORS)


def build_simulator(config: StudentConfig, backend: ChatBackend | None = None) -> StudentSimulator:
    """The simulator ``config.simulator`` names.

    Args:
        config: student settings; an LLM endpoint is built from them unless ``backend`` is given.
        backend: a chat backend to use instead (tests pass ``ScriptedChatBackend``).
    """
    return SIMULATOR_CLASSES[config.simulator](config, backend)
