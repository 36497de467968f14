"""The eight PEARL reward dimensions and the per-sample fields the judge reports.

The order of :data:`DIMENSIONS` is the column order of every ``dim_scores`` tensor,
table and plot in the package (the paper's Table 1 order: Acc, Leak, Complete, Load,
Guide, Meta, Adaptive, Emotion).
"""

from __future__ import annotations

DIMENSIONS: tuple[str, ...] = (
    "acc",  # tutoring accuracy: every statement the tutor makes is mathematically correct
    "leak",  # answer-leakage control: no premature answer or key step (higher = less leakage)
    "complete",  # tutoring completeness: the session reaches a verified solution; source of the gate g
    "load",  # cognitive-load management: one manageable step at a time
    "guide",  # Socratic guidance: questions and hints that lead the student to reason
    "meta",  # metacognitive facilitation: planning, monitoring and reflection prompts
    "adaptive",  # adaptive teaching: responses fit the student's state and misconceptions
    "emotion",  # emotional support: encouragement and a safe tone when the student struggles
)

JUDGE_OK_KEY = "judge_ok"
"""1 when the judge produced a complete, parsed score set; 0 when it failed (sample excluded)."""

COMPLETED_KEY = "completed"
"""1 when the episode ended normally (``EpisodeRecord.ended_normally``: end marker or solved) AND the
judge's completion gate opened (the student solved it); 0 when cut off (turn or token limit), failed
or not solved. The estimator's turn penalty and ``pearl/episode/completed_rate`` read it."""

TUTOR_TURNS_KEY = "tutor_turns"
"""Number of tutor turns N_i. Deliberately not ``num_turns``: verl's ``num_turns`` counts every
chat message (user, assistant, tool), a different quantity that would double the decay exponent."""
