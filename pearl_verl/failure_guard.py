"""Stop a run whose judge or student endpoint keeps failing, instead of training on nothing.

A dialogue whose judgement failed, or whose student or tutor backend failed, is flagged
(``judge_ok=0``) and gets advantage 0. When that holds for most of a batch, step after step, every
advantage is 0 and a run would go on for hours learning nothing, visible only in the
``pearl/judge/failure_rate`` metric. :class:`FailureGuard` turns that into a clear error.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

FAILURE_RATE_KEY = "pearl/judge/failure_rate"


@dataclass(frozen=True)
class FailureGuardConfig:
    """Settings of the failure guard (root config section ``pearl.failure_guard``).

    Attributes:
        max_failure_rate: a step whose share of flagged dialogues (``pearl/judge/failure_rate``) is
            above this counts as failing.
        patience: consecutive failing steps that stop the run; 0 disables the guard.
    """

    max_failure_rate: float = 0.5
    patience: int = 3

    def __post_init__(self) -> None:
        if not 0.0 <= self.max_failure_rate < 1.0:
            raise ValueError(
                f"pearl.failure_guard.max_failure_rate={self.max_failure_rate} must be in [0, 1): at 1 it could never trip."
            )
        if self.patience < 0:
            raise ValueError(f"pearl.failure_guard.patience={self.patience} must be >= 0 (0 disables the guard).")


class TrainingStalled(RuntimeError):
    """Raised when the failure rate stayed above the threshold for ``patience`` consecutive steps."""


class FailureGuard:
    """Counts consecutive steps whose failure rate exceeds the threshold; raises at ``patience``."""

    def __init__(self, config: FailureGuardConfig, resume: str = "relaunch with trainer.resume_mode=auto") -> None:
        """``resume``: how this entry point continues from its last checkpoint, for the message."""
        self.config = config
        self.resume = resume
        self._recent: deque[tuple[int | None, float]] = deque(maxlen=max(config.patience, 1))

    def update(self, metrics: dict[str, float], step: int | None = None) -> None:
        """Take one step's metrics.

        Args:
            metrics: the step's metrics; a step without ``pearl/judge/failure_rate`` (no real
                sample) leaves the count as it is.
            step: the step's number, for the message.

        Raises:
            TrainingStalled: on the ``patience``-th consecutive failing step.
        """
        rate = metrics.get(FAILURE_RATE_KEY)
        if not self.config.patience or rate is None:
            return
        if rate <= self.config.max_failure_rate:
            self._recent.clear()
            return
        self._recent.append((step, float(rate)))
        if len(self._recent) == self.config.patience:
            raise TrainingStalled(self._message())

    def _message(self) -> str:
        steps = [step for step, _ in self._recent]
        where = f"steps {steps[0]}-{steps[-1]}" if None not in steps else f"the last {len(steps)} steps"
        rates = ", ".join(f"{rate:.2f}" for _, rate in self._recent)
        return (
            f"{FAILURE_RATE_KEY} stayed above {self.config.max_failure_rate:g} for {len(steps)} consecutive steps "
            f"({where}: {rates}): those dialogues are flagged judge_ok=0 and get advantage 0, so training learns "
            "nothing. Check the judge endpoint (reward.reward_kwargs.base_url; `pearl-verl doctor`) and the student "
            "endpoint (pearl.student.base_url; dialogues that ended in student_error or tutor_error count here too). "
            f"Checkpoints saved so far are kept: fix the endpoint and {self.resume}. "
            "pearl.failure_guard.max_failure_rate and .patience tune this stop (patience=0 disables it)."
        )
