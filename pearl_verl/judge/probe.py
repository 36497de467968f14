"""``ProbeJudge``: a deliberately learnable test-double judge for checking the training loop itself.

The offline heuristic judge gates every score on the simulated student solving the problem, so
whether the RL machinery works at all is hard to read from it on a tiny model. A probe rewards one
observable property that even a near-uniform 229K-parameter policy produces now and then, gives it
to every dimension, and always opens the completion gate, so a held-out probe reward that rises
shows that rollouts, judge fields, estimator, GSPO loss, optimizer and weight sync together move
the policy the way the reward asks (``tests/verl_plugin/test_main_ppo_learning_on_cpu.py`` holds
verl's trainer to that in every CI run). Two properties:

- ``questions`` (``--judge probe``): ``min(1, number of "?" in the tutor's turns / QUESTIONS_FOR_FULL)``;
- ``capital_openings`` (``--judge probe-openings``): the share of tutor turns whose first character
  is an upper-case letter. With one-token tutor turns (``--max-tokens-per-turn 1``) every rewarded
  token is the first one of its turn, so a response mask off by one token in either direction
  leaves nothing of the property to learn: the learning test uses it for that reason.

It is a test double, not a pedagogical judge: never report its scores as tutoring quality.
"""

from __future__ import annotations

import time

from pearl_verl.dialogue.episode import TUTOR, EpisodeRecord
from pearl_verl.dims import DIMENSIONS
from pearl_verl.errors import InputError
from pearl_verl.judge.judge_contract import JudgeResult

QUESTIONS_FOR_FULL = 2
"""Question marks in a dialogue's tutor turns that earn the full score."""


PROPERTIES = ("questions", "capital_openings")

PROBES = {"probe": "questions", "probe-openings": "capital_openings"}
"""Judge backend names of the probes (``--judge`` of train-local, ``reward_kwargs.backend`` in verl), and the property each rewards."""


class ProbeJudge:
    """Scores one observable property of the tutor's turns (see the module docstring).

    Args:
        prop: one of :data:`PROPERTIES`.
    """

    def __init__(self, prop: str = "questions") -> None:
        if prop not in PROPERTIES:
            raise InputError(f"probe property {prop!r} is not one of {PROPERTIES}.")
        self.prop = prop

    async def judge(self, episode: EpisodeRecord) -> JudgeResult:
        start = time.perf_counter()
        tutor = [turn.text for turn in episode.turns if turn.role == TUTOR]
        if not tutor:
            return JudgeResult(ok=False, error="no tutor turn", latency_s=time.perf_counter() - start)
        if self.prop == "questions":
            score = min(1.0, sum(text.count("?") for text in tutor) / QUESTIONS_FOR_FULL)
        else:  # turns are stored stripped, so a sampled token with a leading space counts by its letter
            score = sum(text[:1].isupper() for text in tutor) / len(tutor)
        return JudgeResult(ok=True, dims={dim: score for dim in DIMENSIONS}, gate=1, latency_s=time.perf_counter() - start)
