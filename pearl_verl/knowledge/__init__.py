"""Knowledge decomposition (paper §3.1): units, fixed prerequisite rules, per-problem DAGs, caching.

No verl imports. See docs/simulator.md for the vocabulary, the rules and the cache format.
"""

from pearl_verl.knowledge.cache import DecompositionCache
from pearl_verl.knowledge.curriculum import Curriculum, KnowledgeUnit, load_curriculum
from pearl_verl.knowledge.decompose_once import Decomposer
from pearl_verl.knowledge.decomposition import Decomposition, DecompositionError, SolutionStep
from pearl_verl.knowledge.extract import parse_extraction, rule_decomposition

__all__ = [
    "Curriculum",
    "Decomposer",
    "Decomposition",
    "DecompositionCache",
    "DecompositionError",
    "KnowledgeUnit",
    "SolutionStep",
    "load_curriculum",
    "parse_extraction",
    "rule_decomposition",
]
