"""Prompt-only baseline students for cross-simulator evaluation (paper §5.3): MathDial- and SocraticLM-style.

Both are plain role-play prompts behind the same ``StudentSimulator`` interface; they have no
knowledge state or planner, so their turn states carry an empty intent, empty mastery and a
heuristic attempt label (:func:`pearl_verl.student.baselines.roleplay.heuristic_attempt`).
"""

from pearl_verl.student.baselines.mathdial import MathDialStudentSimulator
from pearl_verl.student.baselines.socraticlm import SOCRATICLM_TYPES, SocraticLMStudentSimulator

__all__ = ["SOCRATICLM_TYPES", "MathDialStudentSimulator", "SocraticLMStudentSimulator"]
