"""``ProbeJudge``: a deliberately learnable test-double judge for checking the training loop itself.

The offline heuristic judge gates every score on the simulated student solving the problem and
ending the session, which a tiny random model cannot bring about in minutes on a CPU: its reward
stays flat and says nothing about whether the RL machinery works. This probe scores surface features
a 190K-parameter model can change within a few updates, so a rising held-out reward shows that
rollouts, estimator, GSPO loss, optimizer and weight sync move the policy the way the reward asks:

- ``load``: brevity, 1 - mean tutor message length / 160 characters (floored at 0);
- ``guide``: the share of tutor turns that ask a question (contain ``?``);
- ``emotion``: the share of tutor turns with an encouraging word;
- every other dimension: 0.5, so it contributes no advantage; the completion gate is always 1.

It is a test double, not a pedagogical judge: never report its scores as tutoring quality.
"""

from __future__ import annotations

import re
import time

from pearl_verl.dims import DIMENSIONS
from pearl_verl.episode import TUTOR, EpisodeRecord
from pearl_verl.judge.types import JudgeResult

_ENCOURAGING = re.compile(r"\b(good|great|nice|well done|right|excellent|keep going)\b", re.I)
_LENGTH_SCALE = 160.0
NEUTRAL = 0.5


class ProbeJudge:
    """Scores brevity, questions and encouragement of the tutor's turns (see the module docstring)."""

    async def judge(self, episode: EpisodeRecord) -> JudgeResult:
        start = time.perf_counter()
        tutor = [turn.text for turn in episode.turns if turn.role == TUTOR]
        if not tutor:
            return JudgeResult(ok=False, error="no tutor turn", latency_s=time.perf_counter() - start)
        dims = {dim: NEUTRAL for dim in DIMENSIONS}
        dims["load"] = max(0.0, 1.0 - sum(len(t) for t in tutor) / len(tutor) / _LENGTH_SCALE)
        dims["guide"] = sum("?" in t for t in tutor) / len(tutor)
        dims["emotion"] = sum(bool(_ENCOURAGING.search(t)) for t in tutor) / len(tutor)
        return JudgeResult(ok=True, dims=dims, gate=1, latency_s=time.perf_counter() - start)
